// config's face: the projectcalico.org/v3 resource model (resources/), the datastore contract and how a
// datastore is opened (embedded directory or etcd, with its TLS files), and the Kubernetes API client the agent
// reads core objects with (a connection from KUBECONFIG or the ServiceAccount, an informer). Import from here,
// not from the files. Addresses and prefixes are net/'s, below every folder.

export * from './resources/index.js'
export * from './datastore.js'
export { DEFAULT_DATASTORE, openDatastore, openDatastoreFromEnv, parseDatastoreSpec } from './datastore-open.js'
export { checkEtcdTlsFiles, DatastoreSettingError, etcdTlsFilesFromEnv, type EtcdTlsFiles } from './etcd-tls.js'
// The Kubernetes API beside (or as) the datastore: the connection, credentials from the environment, informers.
export { KubeHttp, kubeSourceOf, withRequestDeadline, type KubeResponse, type KubeSource } from './kubernetes/kube-http.js'
export { Informer, objectKey, type InformerEvent, type InformerOptions } from './kubernetes/informer.js'
export { type KubeObject, isObject as isJsonObject } from './kubernetes/objects.js'
export { FANOUT_PORT, FanoutDatastore, type FanoutOptions } from './datastore-fanout.js'
