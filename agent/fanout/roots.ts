// What pinto-fanout serves and every agent behind it asks it for: the resources (with the Kubernetes Nodes) and
// the block affinities, the keys every agent follows whole. A node's own blocks, handles and pods are not here:
// each agent reads those from the datastore itself.

import { RESOURCE_KEY_PREFIX } from '../../config/index.js'
import { AFFINITIES_PREFIX } from '../../ipam/index.js'

export const FANOUT_ROOTS: readonly string[] = [RESOURCE_KEY_PREFIX, AFFINITIES_PREFIX]
