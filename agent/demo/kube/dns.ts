// The Kubernetes demo cluster's DNS: CoreDNS as the kube-dns Service, answering cluster.local from the API
// (the kubernetes plugin) and nothing else (the fabric reaches no upstream resolver). Pure: the objects to apply.

export const DNS_IP = '198.51.100.10'
export const CLUSTER_DOMAIN = 'cluster.local'

const COREFILE = `.:53 {
    errors
    health {
        lameduck 1s
    }
    ready
    kubernetes ${CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    cache 30
    loop
    reload
    loadbalance
}
`

const meta = (name: string, labels = true): object => ({ name, namespace: 'kube-system', ...(labels ? { labels: { 'k8s-app': 'kube-dns' } } : {}) })

/** What `kubectl apply` makes: CoreDNS's account and read access, its Corefile, its Deployment and the kube-dns Service. */
export function dnsObjects(image: string): object {
  return {
    apiVersion: 'v1', kind: 'List',
    items: [
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta('coredns') },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'system:coredns' },
        rules: [
          { apiGroups: [''], resources: ['endpoints', 'services', 'pods', 'namespaces'], verbs: ['list', 'watch'] },
          { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
        ],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'system:coredns' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:coredns' },
        subjects: [{ kind: 'ServiceAccount', name: 'coredns', namespace: 'kube-system' }],
      },
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: meta('coredns', false), data: { Corefile: COREFILE } },
      {
        apiVersion: 'apps/v1', kind: 'Deployment', metadata: meta('coredns'),
        spec: {
          replicas: 1, selector: { matchLabels: { 'k8s-app': 'kube-dns' } },
          template: {
            metadata: { labels: { 'k8s-app': 'kube-dns' } },
            spec: {
              serviceAccountName: 'coredns', priorityClassName: 'system-cluster-critical', dnsPolicy: 'Default',
              tolerations: [{ key: 'CriticalAddonsOnly', operator: 'Exists' }],
              containers: [{
                name: 'coredns', image, imagePullPolicy: 'Never', args: ['-conf', '/etc/coredns/Corefile'],
                ports: [{ name: 'dns', containerPort: 53, protocol: 'UDP' }, { name: 'dns-tcp', containerPort: 53, protocol: 'TCP' }],
                readinessProbe: { httpGet: { path: '/ready', port: 8181 }, periodSeconds: 2 },
                livenessProbe: { httpGet: { path: '/health', port: 8080 }, initialDelaySeconds: 30, periodSeconds: 10 },
                volumeMounts: [{ name: 'config', mountPath: '/etc/coredns', readOnly: true }],
              }],
              volumes: [{ name: 'config', configMap: { name: 'coredns' } }],
            },
          },
        },
      },
      {
        apiVersion: 'v1', kind: 'Service', metadata: { ...meta('kube-dns'), labels: { 'k8s-app': 'kube-dns', 'kubernetes.io/name': 'CoreDNS' } },
        spec: {
          selector: { 'k8s-app': 'kube-dns' }, clusterIP: DNS_IP,
          ports: [{ name: 'dns', port: 53, protocol: 'UDP' }, { name: 'dns-tcp', port: 53, protocol: 'TCP' }],
        },
      },
    ],
  }
}
