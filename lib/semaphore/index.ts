export { DynamoRateBudget, type DynamoRateBudgetOptions } from './dynamo-rate-budget.js';
export {
  InvalidPermitRequestError,
  InvalidSemaphoreOptionsError,
  SemaphoreTableNotFoundError,
  SemaphoreTimeoutError,
} from './errors.js';
export {
  MemoryBudgetTable,
  MemoryRateBudget,
  type MemoryRateBudgetOptions,
} from './memory-rate-budget.js';
export { clampRate, nextRate, overloaded, type RoundTiming } from './rate-law.js';
export type {
  BookingReport,
  BookOptions,
  RateBooking,
  RateBudget,
  StepOptions,
  WriteRound,
} from './rate-types.js';
