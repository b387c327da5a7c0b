export * from './autotune/index.js';
export type { CircuitState } from './circuit-breaker.js';
export { ConcurrencyBudget } from './concurrency-budget.js';
export { AbortError, CircuitOpenError, PoolStoppedError, QueueFullError, TimeoutError } from './errors.js';
export type { PoolEventName, PoolEvents, PoolListener } from './events.js';
export type { ProcessOptions, ProcessSummary } from './executor-pool.js';
export { ExecutorPool } from './executor-pool.js';
export type {
  CircuitBreakerOptions,
  DeduplicationOptions,
  EnqueueOptions,
  ExecutorPoolOptions,
  JitterMode,
  TaskContext,
  TaskFn,
} from './options.js';
export { POOL_DEFAULTS } from './options.js';
export type { AggregateMetrics, DetailedMetrics, PoolStats, Quantiles } from './pool-metrics.js';
export type { BackoffPolicy } from './retry-policy.js';
export { computeBackoff, DEFAULT_RETRYABLE_ERRORS, isRetryableError } from './retry-policy.js';
