export { CONFIG_DEFAULTS, type IngestConfig, loadConfig, type ResourceSchema } from './config.js';
export {
  ConfigError,
  INVALID_MESSAGE_REASONS,
  InvalidBatchError,
  InvalidMessageError,
  type InvalidMessageReason,
  type InvalidWriteIssue,
  SendFailedError,
} from './errors.js';
export type { AwsClients } from './handler/aws-clients.js';
export type { Clock } from './handler/clock.js';
export { systemClock } from './handler/clock.js';
export {
  InvocationDeadlineReachedError,
  OutcomeAlreadySettledError,
  SettleBudgetSpentError,
  UnknownRecordError,
} from './handler/errors.js';
export {
  createIngestHandler,
  type IngestHandler,
  type IngestHandlerOptions,
  type InvocationSummary,
} from './handler/ingest-handler.js';
export type { RateBudgetFactory } from './handler/run/rate-holder.js';
export type { TransientCause, WriteOutcome } from './handler/run/write-outcome.js';
export type { DeadLetter } from './handler/settle/dead-letter-queue.js';
export type { DeadLetterReason } from './handler/settle/dead-letter-reason.js';
export type { DeadLetterSink } from './handler/settle/dead-letter-sink.js';
export { type LetterFilter, MemoryDeadLetterSink } from './handler/settle/memory-dead-letter-sink.js';
export * from './message/index.js';
export {
  Producer,
  type ProducerOptions,
  type SendOptions,
  type SendResult,
  type SentMessage,
} from './producer.js';
