// `s3-ingest`: what a producer service and a user of the executor pool import. It loads only the SQS client
// (the package's one dependency); every other part has its own entry point with its own optional peers:
//   s3-ingest/ingest     the Lambda handler, its config, the message contract (S3 + DynamoDB clients, Ajv)
//   s3-ingest/db         the per-tenant document store on S3 (@aws-sdk/client-s3, Ajv)
//   s3-ingest/semaphore  the prefixes' write-rate budgets on DynamoDB (@aws-sdk/client-dynamodb)
//   s3-ingest/local      the embedded emulators and the local pipeline (fauxqs, dynalite)

export { isThrottling, isTimeout, isTransient, S3IngestError } from './errors/index.js';
export {
  InvalidBatchError,
  InvalidMessageError,
  type InvalidMessageReason,
  type InvalidWriteIssue,
  SendFailedError,
} from './ingest/errors.js';
export type {
  DeleteWrite,
  InsertWrite,
  JsonObject,
  JsonValue,
  ProducerWrite,
  ResourceNames,
  UpdateWrite,
  UpsertWrite,
  WriteData,
  WriteOp,
} from './ingest/message/types.js';
export {
  Producer,
  type ProducerOptions,
  type SendOptions,
  type SendResult,
  type SentMessage,
} from './ingest/producer.js';
export * from './pool/index.js';
