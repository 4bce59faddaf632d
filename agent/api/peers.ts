// GET /v1/status and /v1/peers, and the peer admin action POST /v1/peers/:name/refresh (a mutation).
// An encapsulated plugin: it reads ApiDeps and renders views; it never drives sessions itself.

import type { FastifyPluginAsync } from 'fastify'
import { affinityNode, blockInUse } from '../../ipam/index.js'
import { requireWrite } from './auth.js'
import type { ApiDeps } from './deps.js'
import { ApiError, errorSchema } from './errors.js'
import { affinityConflictSchema, peerSchema, peerView } from './views.js'

const count = { type: 'integer' } as const

export const peersPlugin: FastifyPluginAsync<{ deps: ApiDeps }> = async (app, { deps }) => {
  app.get(
    '/v1/status',
    {
      schema: {
        summary: 'The node at a glance: identity, uptime and counts',
        response: {
          200: {
            type: 'object',
            properties: {
              node: { type: 'string' },
              asn: count,
              routerId: { type: 'string' },
              uptimeSeconds: count,
              peers: { type: 'object', properties: { configured: count, established: count } },
              routes: { type: 'object', properties: { locRib: count, fib: { type: ['integer', 'null'] } } },
              ipam: { type: ['object', 'null'], properties: { blocks: count, localBlocks: count, addressesInUse: count, pools: count } },
              datastore: {
                type: 'object',
                properties: {
                  state: { type: 'string', enum: ['up', 'down'] },
                  since: { type: 'string' },
                  cause: { type: 'string' },
                  transitions: { type: 'object', properties: { up: count, down: count } },
                },
              },
            },
          },
        },
      },
    },
    async () => {
      const peers = deps.bgp.peerStatus()
      const health = deps.datastore?.health()
      // The IPAM counts come from the datastore: null while it is away, so the status still answers at once.
      const ipamRead = health?.state === 'down' ? undefined : await Promise.all([deps.ipam.blocks(), deps.ipam.pools()]).catch((err: unknown) => {
        if (health === undefined) throw err
        return undefined
      })
      let fib: number | null = null
      if (deps.fib !== undefined) {
        fib = deps.fib.count?.() ?? 0
        if (deps.fib.count === undefined) for (const _ of deps.fib.routes()) fib++
      }
      return {
        node: deps.node,
        asn: deps.bgp.asn,
        routerId: deps.bgp.routerId,
        uptimeSeconds: deps.uptimeSeconds(),
        peers: { configured: peers.length, established: peers.filter((p) => p.state === 'Established').length },
        routes: { locRib: deps.bgp.locRibSize, fib },
        ipam:
          ipamRead === undefined
            ? null
            : {
                blocks: ipamRead[0].length,
                localBlocks: ipamRead[0].filter((b) => affinityNode(b) === deps.node).length,
                addressesInUse: ipamRead[0].reduce((n, b) => n + blockInUse(b), 0),
                pools: ipamRead[1].length,
              },
        ...(health !== undefined
          ? { datastore: { state: health.state, since: new Date(health.since).toISOString(), ...(health.cause !== undefined ? { cause: health.cause } : {}), transitions: health.transitions } }
          : {}),
      }
    },
  )

  app.get(
    '/v1/peers',
    {
      schema: {
        summary: 'Every configured BGP peer with its session state, prefix counts and negotiated capabilities',
        response: { 200: { type: 'object', properties: { peers: { type: 'array', items: peerSchema }, affinityConflicts: { type: 'array', items: affinityConflictSchema } } } },
      },
    },
    async () => ({
      peers: deps.bgp
        .peerStatus()
        .map((p) => peerView(p, deps.announcements?.forPeer(p.name)))
        .sort((a, b) => String(a['name']).localeCompare(String(b['name']))),
      affinityConflicts: deps.announcements?.affinityConflicts() ?? [],
    }),
  )

  app.post<{ Params: { name: string }; Querystring: { direction?: 'in' | 'out' } }>(
    '/v1/peers/:name/refresh',
    {
      // Before the body is read: a refused client must not get to upload it.
      onRequest: requireWrite(deps.token),
      schema: {
        summary: 'Soft reset of one peer: in asks it to resend (ROUTE-REFRESH), out re-advertises everything',
        description: 'A mutation: allowed over the unix socket, or over TCP with the bearer token.',
        params: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
        querystring: { type: 'object', additionalProperties: false, properties: { direction: { type: 'string', enum: ['in', 'out'], default: 'in' } } },
        response: { 200: { type: 'object', properties: { peer: { type: 'string' }, direction: { type: 'string' }, sent: { type: 'boolean' } } }, '4xx': errorSchema },
      },
    },
    async (request) => {
      const { name } = request.params
      const direction = request.query.direction ?? 'in'
      if (deps.actions === undefined) throw new ApiError('not-found', 'this agent offers no admin actions')
      if (deps.bgp.peerStatus().every((p) => p.name !== name)) throw new ApiError('unknown-peer', `no peer named ${JSON.stringify(name)}`, 'name')
      return { peer: name, direction, sent: deps.actions.refreshPeer(name, direction) }
    },
  )
}
