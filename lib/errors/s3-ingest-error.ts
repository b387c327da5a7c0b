/**
 * Base class of every error this package throws on purpose. Subclasses set a stable `name` (part of the
 * public API: match on `err.name` or `instanceof`), so logs, DLQ reasons and retries can key on it.
 */
export abstract class S3IngestError extends Error {
  abstract override readonly name: string;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
