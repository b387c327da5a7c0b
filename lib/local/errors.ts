import { S3IngestError } from '../errors/index.js';

/** An option of the local stack (behaviour model, chaos proxy, provisioning, `npm run local`) is invalid. */
export class InvalidLocalOptionError extends S3IngestError {
  override readonly name = 'InvalidLocalOptionError';

  constructor(
    /** The option at fault, e.g. `writesPerSecond` or `faults.resetRate`. */
    readonly option: string,
    message: string,
  ) {
    super(`${option}: ${message}`);
  }
}

/** The embedded AWS stack cannot start as built: a dependency it relies on does not have what it needs. */
export class LocalStackError extends S3IngestError {
  override readonly name = 'LocalStackError';
}
