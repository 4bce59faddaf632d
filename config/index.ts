// config's face: the projectcalico.org/v3 resource model (resources/), the datastore contract and how a
// datastore is opened (embedded directory or etcd, with its TLS files). Import from here, not from the
// files. Addresses and prefixes are net/'s, below every folder.

export * from './resources/index.js'
export * from './datastore.js'
export { DEFAULT_DATASTORE, openDatastore, openDatastoreFromEnv, parseDatastoreSpec } from './datastore-open.js'
export { checkEtcdTlsFiles, DatastoreSettingError, etcdTlsFilesFromEnv, type EtcdTlsFiles } from './etcd-tls.js'
