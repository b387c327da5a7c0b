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
export * from './message/index.js';
export {
  Producer,
  type ProducerOptions,
  type SendOptions,
  type SendResult,
  type SentMessage,
} from './producer.js';
