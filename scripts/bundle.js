#!/usr/bin/env node
// Bundles the per-pod programs (the CNI plugins) into single files so each exec loads one script.
// Filled in with the CNI plugins; until then there is nothing to bundle.
