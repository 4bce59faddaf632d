// config's face: the projectcalico.org/v3 resource model (resources/), the datastore contract and how a
// datastore is opened (embedded directory, etcd with its TLS files, or the Kubernetes API), and the way to the
// Kubernetes API for readers of core objects (credentials, informers). Import from here, not from the files. The
// address module (config/ip) stands apart, below every folder.

export * from './resources/index.js'
export * from './datastore.js'
export { DEFAULT_DATASTORE, openDatastore, openDatastoreFromEnv, parseDatastoreSpec } from './datastore-open.js'
export { checkEtcdTlsFiles, DatastoreSettingError, etcdTlsFilesFromEnv, type EtcdTlsFiles } from './etcd-tls.js'
export { KubeHttp, kubeSourceOf, type KubeSource } from './kubernetes/kube-http.js'
export { Informer, type InformerEvent } from './kubernetes/informer.js'
export type { KubeObject } from './kubernetes/objects.js'
