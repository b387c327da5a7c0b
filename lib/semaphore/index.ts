export {
  AdaptiveDynamoSemaphore,
  type AdaptiveDynamoSemaphoreOptions,
} from './adaptive-dynamo-semaphore.js';
export {
  type AdaptiveLimitOptions,
  type AdaptiveState,
  adaptLimit,
  type LeaseOutcome,
} from './adaptive-limit.js';
export { DynamoSemaphore, type DynamoSemaphoreOptions } from './dynamo-semaphore.js';
export {
  InvalidPermitRequestError,
  InvalidSemaphoreOptionsError,
  LeaseLostError,
  SemaphoreConfigMismatchError,
  type SemaphoreShape,
  SemaphoreTableNotFoundError,
  SemaphoreTimeoutError,
} from './errors.js';
export { MemorySemaphore, type MemorySemaphoreOptions } from './memory-semaphore.js';
export { type PermitSizing, permitsFor } from './permits-for.js';
export type { AcquireOptions, Lease, LeaseCallOptions, LeaseUsage, Semaphore } from './types.js';
export { type ConcurrencyTarget, type PermitRequest, withPermits } from './with-permits.js';
