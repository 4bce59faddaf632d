#!/usr/bin/env node
// Removes compiled output so a test run never picks up JavaScript of a source file that is gone.
import { rmSync } from 'node:fs'
rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true })
