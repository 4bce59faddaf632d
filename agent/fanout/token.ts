// The bearer token pinto-fanout asks for and pinto-node sends, read once at start from PINTO_FANOUT_TOKEN_FILE
// by both alike: a file that cannot be read, or holds nothing, stops the program naming the variable.

import { readFileSync } from 'node:fs'
import { SettingsError } from '../settings.js'

export function readFanoutToken(file: string): string {
  let token: string
  try {
    token = readFileSync(file, 'utf8').trim()
  } catch (err) {
    throw new SettingsError('PINTO_FANOUT_TOKEN_FILE', `cannot read ${file}: ${(err as Error).message}`)
  }
  if (token === '') throw new SettingsError('PINTO_FANOUT_TOKEN_FILE', `${file} is empty`)
  return token
}
