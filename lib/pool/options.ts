// The pool's options, composed from the policies' own option types. Each policy's file owns its options
// and their defaults (retry-policy.ts, circuit-breaker.ts, concurrency-budget.ts, dedup.ts,
// autotune/options.ts); this file only adds what belongs to the scheduler itself.
import type { AutotuneOptions } from './autotune/options.js';
import { CIRCUIT_BREAKER_DEFAULTS, type CircuitBreakerOptions } from './circuit-breaker.js';
import type { BudgetOptions } from './concurrency-budget.js';
import { DEDUPLICATION_DEFAULTS, type DeduplicationOptions } from './dedup.js';
import { RETRY_DEFAULTS, type RetryOptions, type RetryPolicy, resolveRetryOptions } from './retry-policy.js';
import { assertConcurrency, nonNegative } from './validation.js';

export interface ExecutorPoolOptions extends RetryOptions, BudgetOptions {
  /**
   * Maximum attempts in flight (timed-out work still counts until it settles). An integer >= 1, or `'auto'`:
   * the autotuner (see `autotune`) finds the level itself from latency, throttling and memory. Change it
   * live with `setConcurrency`.
   * @default 10
   * @example new ExecutorPool({ concurrency: 100 })
   */
  concurrency?: number | 'auto';
  /**
   * Adaptive concurrency (lib/pool/autotune). On with `concurrency: 'auto'` (starting from
   * `autotune.initialConcurrency`, default 10) or with `autotune.enabled: true` (starting from the numeric
   * `concurrency`).
   * @default undefined (off)
   * @example new ExecutorPool({ concurrency: 'auto', autotune: { minConcurrency: 2, maxConcurrency: 200 } })
   */
  autotune?: AutotuneOptions;
  /**
   * Per-attempt timeout in ms; `0` or `Infinity` disables it. A timed-out attempt rejects (or retries) at
   * once; its slot is freed when its work settles.
   * @default 30000
   * @example new ExecutorPool({ timeout: 5_000 })
   */
  timeout?: number;
  /**
   * Queued tasks beyond this make `enqueue` reject with QueueFullError (a task that can start at once is
   * never refused; retries re-entering the queue are not counted against it).
   * @default Infinity
   * @example new ExecutorPool({ maxQueueSize: 10_000 })
   */
  maxQueueSize?: number;
  /**
   * Circuit breaker; see `CircuitBreakerOptions`.
   * @default undefined (disabled)
   * @example new ExecutorPool({ circuitBreaker: { enabled: true, threshold: 0.5 } })
   */
  circuitBreaker?: CircuitBreakerOptions;
  /**
   * Single-flight by key; see `DeduplicationOptions`.
   * @default { enabled: true, ttl: 60000 } (explicit `dedupKey`s are honoured, no `keyFn`)
   * @example new ExecutorPool({ deduplication: { ttl: 5_000 } })
   */
  deduplication?: DeduplicationOptions;
  /**
   * Starts paused: nothing runs until `resume()`.
   * @default false
   * @example const pool = new ExecutorPool({ paused: true }); queueEverything(pool); pool.resume();
   */
  paused?: boolean;
}

/** Resolved pool options: every default filled in. */
export interface ResolvedPoolOptions extends RetryPolicy {
  readonly timeout: number;
  readonly maxQueueSize: number;
}

/** Every default in one object, for callers that display or derive from them. */
export const POOL_DEFAULTS = {
  concurrency: 10,
  ...RETRY_DEFAULTS,
  timeout: 30_000,
  maxQueueSize: Number.POSITIVE_INFINITY,
  circuitBreaker: CIRCUIT_BREAKER_DEFAULTS,
  deduplicationTtl: DEDUPLICATION_DEFAULTS.ttl,
} as const;

export function resolvePoolOptions(options: ExecutorPoolOptions): ResolvedPoolOptions {
  const timeout = nonNegative('timeout', options.timeout ?? POOL_DEFAULTS.timeout);
  return {
    ...resolveRetryOptions(options),
    timeout: timeout === 0 ? Number.POSITIVE_INFINITY : timeout,
    maxQueueSize: nonNegative('maxQueueSize', options.maxQueueSize ?? POOL_DEFAULTS.maxQueueSize),
  };
}

/** The concurrency a pool starts at: the option, or with `'auto'` the autotuner's `initialConcurrency`. */
export function startingConcurrency(options: ExecutorPoolOptions): number {
  const concurrency =
    options.concurrency === 'auto'
      ? (options.autotune?.initialConcurrency ?? POOL_DEFAULTS.concurrency)
      : (options.concurrency ?? POOL_DEFAULTS.concurrency);
  assertConcurrency(concurrency);
  return concurrency;
}

/** Whether the pool gets an autotuner: `concurrency: 'auto'` (unless `autotune.enabled: false`) or `autotune.enabled`. */
export function autotunes(options: ExecutorPoolOptions): boolean {
  const enabled = options.autotune?.enabled;
  return (options.concurrency === 'auto' && enabled !== false) || enabled === true;
}
