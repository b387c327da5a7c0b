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
export { DynamoRateBudget, type DynamoRateBudgetOptions } from './dynamo-rate-budget.js';
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
export {
  MemoryBudgetTable,
  MemoryRateBudget,
  type MemoryRateBudgetOptions,
} from './memory-rate-budget.js';
export { MemorySemaphore, type MemorySemaphoreOptions } from './memory-semaphore.js';
export { type PermitSizing, permitsFor } from './permits-for.js';
export { clampRate, nextRate, overloaded } from './rate-law.js';
export type { BookingReport, BookOptions, RateBooking, RateBudget, WriteRound } from './rate-types.js';
export type { AcquireOptions, Lease, LeaseCallOptions, LeaseUsage, Semaphore } from './types.js';
export { type ConcurrencyTarget, type PermitRequest, withPermits } from './with-permits.js';
