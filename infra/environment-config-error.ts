import { S3IngestError } from '../lib/errors/index.js';

/** A `cdk.json` environment block or a deployment setting is missing, malformed or inconsistent; the message names the key. */
export class EnvironmentConfigError extends S3IngestError {
  override readonly name = 'EnvironmentConfigError';
}
