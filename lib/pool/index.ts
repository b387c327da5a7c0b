export * from './autotune/index.js';
export type { CircuitBreakerOptions } from './circuit-breaker.js';
export { CIRCUIT_BREAKER_DEFAULTS, circuitBreaker } from './circuit-breaker.js';
export type {
  BreakerCompanion,
  CircuitState,
  DeduplicationCompanion,
  PoolTuner,
  TunerCompanion,
} from './companions.js';
export type { BudgetOptions } from './concurrency-budget.js';
export { ConcurrencyBudget } from './concurrency-budget.js';
export type { DeduplicationOptions } from './dedup.js';
export { DEDUPLICATION_DEFAULTS, deduplication } from './dedup.js';
export {
  CircuitOpenError,
  PoolStoppedError,
  QueueFullError,
  TaskAbortedError,
  TaskTimeoutError,
} from './errors.js';
export type { PoolEventName, PoolEvents, PoolListener } from './events.js';
export { ExecutorPool } from './executor-pool.js';
export type { ExecutorPoolOptions } from './options.js';
export { POOL_DEFAULTS } from './options.js';
export type { AggregateMetrics, DetailedMetrics, PoolStats, Quantiles } from './pool-metrics.js';
export type { ProcessOptions, ProcessSummary, ProcessTarget } from './process.js';
export { processWithPool } from './process.js';
export type { BackoffPolicy, JitterMode, RetryOptions } from './retry-policy.js';
export { computeBackoff, DEFAULT_RETRYABLE_ERRORS, isRetryableError } from './retry-policy.js';
export type { StartIntervalOptions } from './start-pacer.js';
export type { EnqueueOptions, TaskContext, TaskFn } from './task.js';
