export const MaterialErrorCode = {
  /** The file or Secret is missing, or lacks a key. */
  NOT_FOUND: 'TLS_MATERIAL_NOT_FOUND',
  /** The content is not what it should be (not PEM, key does not match the certificate…). */
  INVALID: 'TLS_MATERIAL_INVALID',
  /** The Kubernetes API refused or could not be reached. */
  UNAVAILABLE: 'TLS_MATERIAL_UNAVAILABLE',
} as const;
export type MaterialErrorCode = (typeof MaterialErrorCode)[keyof typeof MaterialErrorCode];

/** TLS material or a signing key that cannot be used; the message names where it came from. */
export class MaterialError extends Error {
  override readonly name = 'MaterialError';
  constructor(
    readonly code: MaterialErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
