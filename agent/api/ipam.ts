// GET /v1/ipam/blocks and /v1/ipam/allocations: every node's blocks (with the pool each belongs to) and
// the addresses allocated in them. Reads only; allocation happens in ipam/ through the CNI service.

import type { FastifyPluginAsync } from 'fastify'
import { blockCidr } from '../../ipam/index.js'
import type { ApiDeps } from './deps.js'
import { errorSchema } from './errors.js'
import { allocationRows, allocationSchema, blockSchema, blockView } from './views.js'

const nodeFilter = {
  type: 'object',
  additionalProperties: false,
  properties: { node: { type: 'string', minLength: 1, description: 'only this node’s blocks (blocks) or addresses given to it (allocations)' } },
} as const

export const ipamPlugin: FastifyPluginAsync<{ deps: ApiDeps }> = async (app, { deps }) => {
  // By family, then address: the order an operator reads a pool in.
  const sortedBlocks = async () =>
    [...(await deps.ipam.blocks())].map((b) => ({ b, c: blockCidr(b) })).sort((x, y) => x.c.family - y.c.family || (x.c.base < y.c.base ? -1 : x.c.base > y.c.base ? 1 : 0)).map((x) => x.b)

  app.get<{ Querystring: { node?: string } }>(
    '/v1/ipam/blocks',
    {
      schema: {
        summary: 'IPAM blocks of every node, with their pool and usage',
        querystring: nodeFilter,
        response: { 200: { type: 'object', properties: { blocks: { type: 'array', items: blockSchema } } }, '4xx': errorSchema },
      },
    },
    async (request) => {
      const pools = await deps.ipam.pools()
      const node = request.query.node
      const blocks = (await sortedBlocks()).map((b) => blockView(b, pools)).filter((b) => node === undefined || b['node'] === node)
      return { blocks }
    },
  )

  app.get<{ Querystring: { node?: string } }>(
    '/v1/ipam/allocations',
    {
      schema: {
        summary: 'Allocated addresses: handle, owner attributes, and whether borrowed from another node’s block',
        querystring: nodeFilter,
        response: { 200: { type: 'object', properties: { allocations: { type: 'array', items: allocationSchema } } }, '4xx': errorSchema },
      },
    },
    async (request) => {
      const node = request.query.node
      const allocations = (await sortedBlocks()).flatMap(allocationRows).filter((a) => node === undefined || a.node === node)
      return { allocations }
    },
  )
}
