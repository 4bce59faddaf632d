// A CPU profile of one phase of a bench process (node:inspector's Profiler), written as a .cpuprofile that
// Chrome DevTools and `node dist/bench/cpu-profile-top.js` read. Owns the inspector session only.
import { Session } from 'node:inspector'
import { writeFileSync } from 'node:fs'

export interface PhaseProfile {
  /** Stops profiling and writes the profile to `file`. */
  stop(file: string): Promise<void>
}

function post<T>(s: Session, method: string, params?: object): Promise<T> {
  return new Promise((resolve, reject) => s.post(method, params ?? {}, (err, res) => (err ? reject(err) : resolve(res as T))))
}

/** Starts profiling this process now, sampling every `intervalUs` microseconds. */
export async function startProfile(intervalUs = 200): Promise<PhaseProfile> {
  const s = new Session()
  s.connect()
  await post(s, 'Profiler.enable')
  await post(s, 'Profiler.setSamplingInterval', { interval: intervalUs })
  await post(s, 'Profiler.start')
  return {
    stop: async (file) => {
      const { profile } = await post<{ profile: unknown }>(s, 'Profiler.stop')
      writeFileSync(file, JSON.stringify(profile))
      s.disconnect()
    },
  }
}
