// What the Kubernetes demo cluster runs to show pinto at work, shared by the demo and the tests: a Deployment of
// busybox web servers spread over the nodes, its Services, the pods as the API lists them, and probes run
// inside the pods with kubectl exec (ping, and an HTTP GET through nc).

import type { PingMatrix } from '../observe.js'
import { BUSYBOX_IMAGE } from './images.js'

export interface KubePod {
  readonly name: string
  readonly uid: string
  readonly ip: string
  readonly node: string
}

/** Anything that runs kubectl against the cluster. */
export interface Kubectl {
  kubectl(args: readonly string[], input?: string): Promise<string>
}

export const WEB_LABEL = 'app=web'

/**
 * `replicas` HTTP servers answering their pod's name on 8080, at most one apart per node; with `soft`, spread
 * where it can be (a drained node's pods then go to the others).
 */
export function webDeployment(replicas: number, spread: 'hard' | 'soft' = 'hard'): object {
  return {
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'default' },
    spec: {
      replicas, selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: {
          topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: spread === 'hard' ? 'DoNotSchedule' : 'ScheduleAnyway', labelSelector: { matchLabels: { app: 'web' } } }],
          terminationGracePeriodSeconds: 1,
          containers: [{
            name: 'web', image: BUSYBOX_IMAGE, imagePullPolicy: 'Never',
            command: ['/bin/sh', '-c', 'mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 8080 -h /www'],
            ports: [{ containerPort: 8080 }],
            readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
          }],
        },
      },
    },
  }
}

/** The web pods' Service of `type`, port 80 to 8080. */
export function webService(name: string, type: 'ClusterIP' | 'NodePort'): object {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'default' }, spec: { type, selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] } }
}

/** An HTTP GET through busybox nc, run in a pod: prints the answering pod's hostname, or nothing. */
export const httpGet = (host: string, port: number): string => `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 ${host} ${port} | tail -n 1`

/** The running pods (not being deleted) that `selector` picks, in the default namespace. */
export async function runningPods(c: Kubectl, selector: string): Promise<KubePod[]> {
  const list = JSON.parse(await c.kubectl(['get', 'pods', '-l', selector, '-o', 'json'])) as { items: { metadata: { name: string; uid: string; deletionTimestamp?: string }; spec: { nodeName?: string }; status: { podIP?: string; phase?: string } }[] }
  return list.items
    .filter((p) => p.metadata.deletionTimestamp === undefined && p.status.phase === 'Running' && p.status.podIP !== undefined)
    .map((p) => ({ name: p.metadata.name, uid: p.metadata.uid, ip: p.status.podIP ?? '', node: p.spec.nodeName ?? '' }))
}

/**
 * Every pod pings every target (by name -> address), one kubectl exec per pod running all its pings: the
 * matrix the demo prints, keyed by pod name and target name.
 */
export async function kubePingMatrix(c: Kubectl, pods: readonly KubePod[], targets: ReadonlyMap<string, string>): Promise<PingMatrix> {
  const out: PingMatrix = new Map()
  for (const p of pods) {
    const row = new Map<string, boolean>()
    out.set(p.name, row)
    const script = [...targets].map(([name, ip]) => (name === p.name ? '' : `ping -c 1 -W 2 ${ip} >/dev/null 2>&1 && echo "ok ${name}" || echo "FAIL ${name}"`)).filter((s) => s !== '').join('; ')
    const lines = (await c.kubectl(['exec', p.name, '--', 'sh', '-c', script]).catch(() => '')).split('\n')
    for (const name of targets.keys()) if (name !== p.name) row.set(name, lines.includes(`ok ${name}`))
  }
  return out
}
