// What a session negotiated, as the codec needs it. Each direction has its own options:
// add-path may be on for receiving and off for sending.

export interface CodecOptions {
  /** RFC 6793: both sides advertised the 4-octet AS capability. */
  readonly as4: boolean
  /** RFC 7911: families (`familyKey(afi, safi)`) whose NLRI carry path identifiers in this direction. */
  readonly addPath: ReadonlySet<number>
  /** RFC 8654: both sides advertised extended message; UPDATEs may be up to 65535 bytes. */
  readonly extendedMessage: boolean
}

export const DEFAULT_CODEC_OPTIONS: CodecOptions = Object.freeze({
  as4: true,
  addPath: new Set<number>(),
  extendedMessage: false,
})

export function codecOptions(partial: Partial<CodecOptions> = {}): CodecOptions {
  return { ...DEFAULT_CODEC_OPTIONS, ...partial }
}
