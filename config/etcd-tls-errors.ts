// Maps a failed TLS handshake with etcd, as grpc-js reports it (UNAVAILABLE, "Last error: " plus Node's or OpenSSL's
// text), onto one line naming the setting to fix. Pure: it reads the error's message only; anything it does not
// recognise as a certificate problem is left to the caller (undefined).

import { DatastoreError } from './datastore.js'
import { DatastoreSettingError, ETCD_CA_CERT_FILE, ETCD_CERT_FILE, type EtcdCredentials } from './etcd-tls.js'

/** OpenSSL/Node texts for "the server's certificate does not chain to the roots we trust". */
const UNTRUSTED = /unable to verify the first certificate|unable to get local issuer certificate|self[- ]signed certificate|certificate signature failure|UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|UNABLE_TO_GET_ISSUER_CERT/i
/** TLS alerts the server sends when it refuses our client certificate (or its absence). */
const CLIENT_REFUSED = /alert bad certificate|alert certificate required|alert unknown ca|alert unsupported certificate|alert certificate unknown|SSL alert number (42|43|46|48|116)\b/i
const WRONG_NAME = /ERR_TLS_CERT_ALTNAME_INVALID|does not match certificate's altnames/i
const EXPIRED = /certificate has expired|CERT_HAS_EXPIRED|certificate is not yet valid|CERT_NOT_YET_VALID/i
const NOT_TLS = /wrong version number|packet length too long|unknown protocol|http request/i
/** The peer hung up before the connection was established: what a plain etcd does to a ClientHello. */
const RESET_IN_HANDSHAKE = /No connection established\. Last error: (?:Error: )?(?:read ECONNRESET|Client network socket disconnected before secure TLS connection was established)/

const detail = (message: string, re: RegExp): string => re.exec(message)?.[0] ?? ''
/** Node's "IP: 127.0.0.1 is not in the cert's list: 127.0.0.2", up to grpc-js's own trailer. */
const ALTNAMES = /altnames: (.*?)(?:\. Resolution note|\s*\(\d{4}-\d\d-\d\dT|\n|$)/

export function tlsFailure(urls: string, tls: EtcdCredentials, err: unknown): DatastoreError | undefined {
  const message = err instanceof Error ? err.message : String(err)
  const { ca, cert } = tls.files
  if (UNTRUSTED.test(message)) {
    return new DatastoreSettingError(
      ETCD_CA_CERT_FILE,
      ca !== undefined
        ? `etcd at ${urls} presented a certificate not signed by the CA in ${ca} (${detail(message, UNTRUSTED)})`
        : `etcd at ${urls} presented a certificate not signed by any of Node's bundled root CAs; set ${ETCD_CA_CERT_FILE} to the CA that signed it`,
    )
  }
  if (CLIENT_REFUSED.test(message)) {
    return new DatastoreSettingError(
      ETCD_CERT_FILE,
      cert !== undefined
        ? `etcd at ${urls} refused the client certificate in ${cert} (${detail(message, CLIENT_REFUSED)}): it is not signed by a CA etcd trusts`
        : `etcd at ${urls} requires a client certificate (${detail(message, CLIENT_REFUSED)}); set ${ETCD_CERT_FILE} and PINTO_ETCD_KEY_FILE`,
    )
  }
  if (WRONG_NAME.test(message)) {
    return new DatastoreSettingError('PINTO_DATASTORE', `etcd at ${urls} presented a certificate for another name (${ALTNAMES.exec(message)?.[1] ?? detail(message, WRONG_NAME)}); name etcd by an address or host its certificate holds`)
  }
  if (EXPIRED.test(message)) return new DatastoreSettingError('PINTO_DATASTORE', `etcd at ${urls} presented a certificate that is not valid now (${detail(message, EXPIRED)})`)
  if (NOT_TLS.test(message)) return new DatastoreSettingError('PINTO_DATASTORE', `etcd at ${urls} does not answer TLS (${detail(message, NOT_TLS)}); for a plain etcd use etcd:// or http://`)
  if (RESET_IN_HANDSHAKE.test(message)) {
    return new DatastoreSettingError('PINTO_DATASTORE', `etcd at ${urls} closed the connection during the TLS handshake; if it does not answer TLS, use etcd:// or http://`)
  }
  return undefined
}
