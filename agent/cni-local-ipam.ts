// The IPAM service as the CNI channel's ADDs and DELs reach it: in-process, with the plugins' IpamPort
// interface and the service's errors turned into the ones the plugins' client would raise.

import { type AssignReply, type IpamPort, serviceError } from '../cni/index.js'
import { type IpamService, errorReply } from './ipam-service.js'

/** The IPAM service as the plugins' IpamClient would reach it, without the socket. */
export class LocalIpam implements IpamPort {
  /**
   * ADD spawns its `ip` processes once the request is "sent": each spawn holds this thread, so let the
   * request reach its datastore write first (its steps run as microtasks and one setImmediate), and the
   * write's fdatasync runs while the processes start. Read per request.
   */
  get sent(): Promise<void> {
    return new Promise((resolve) => setImmediate(() => setImmediate(resolve)))
  }

  constructor(private readonly service: IpamService) {}

  assign(req: Parameters<IpamPort['assign']>[0]): Promise<AssignReply> {
    return this.call(() => this.service.assign({ ...req }))
  }

  releaseByHandle(handle: string): ReturnType<IpamPort['releaseByHandle']> {
    return this.call(() => this.service.release({ handle }))
  }

  allocations(prefix: string): ReturnType<IpamPort['allocations']> {
    return this.service.allocations(prefix)
  }

  status(): ReturnType<IpamPort['status']> {
    return this.service.status()
  }

  private async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn()
    } catch (err) {
      const [status, body] = errorReply(err)
      throw serviceError(status, body)
    }
  }
}
