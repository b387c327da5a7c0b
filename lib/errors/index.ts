// The bottom layer: the error base class and the one error taxonomy. Every other folder may import it;
// it imports nothing of ours.
export {
  httpStatusOf,
  isThrottling,
  isTimeout,
  isTransient,
  NETWORK_ERROR_CODES,
  THROTTLING_ERROR_NAMES,
  TIMEOUT_ERROR_NAMES,
  TRANSIENT_SERVER_ERROR_NAMES,
} from './classify.js';
export { S3IngestError } from './s3-ingest-error.js';
