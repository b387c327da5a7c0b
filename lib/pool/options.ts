// The pool's options, composed from the policies' own option types. Each policy's file owns its options
// and their defaults (retry-policy.ts, concurrency-budget.ts); the optional companions (circuit breaker,
// deduplication, autotune) are factories whose implementations this file never imports (companions.ts).
import type { BreakerCompanion, DeduplicationCompanion, TunerCompanion } from './companions.js';
import type { BudgetOptions } from './concurrency-budget.js';
import { RETRY_DEFAULTS, type RetryOptions, type RetryPolicy, resolveRetryOptions } from './retry-policy.js';
import { assertConcurrency, nonNegative } from './validation.js';

export interface ExecutorPoolOptions extends RetryOptions, BudgetOptions {
  /**
   * Maximum attempts in flight (timed-out work still counts until it settles). An integer >= 1, or `'auto'`
   * (with `autotune`): start from the tuner's `initialConcurrency` and let it find the level from latency,
   * throttling and memory. Change it live with `setConcurrency`.
   * @default 10
   * @example new ExecutorPool({ concurrency: 100 })
   */
  concurrency?: number | 'auto';
  /**
   * Adaptive concurrency: `autotune({...})` from lib/pool/autotune. The pool starts at `concurrency` (from
   * the tuner's `initialConcurrency` with `'auto'`, default 10) and the tuner moves it.
   * @default undefined (off)
   * @example new ExecutorPool({ concurrency: 'auto', autotune: autotune({ minConcurrency: 2, maxConcurrency: 200 }) })
   */
  autotune?: TunerCompanion;
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
   * Circuit breaker: `circuitBreaker({...})` (circuit-breaker.ts; see `CircuitBreakerOptions`).
   * @default undefined (none)
   * @example new ExecutorPool({ circuitBreaker: circuitBreaker({ threshold: 0.5 }) })
   */
  circuitBreaker?: BreakerCompanion;
  /**
   * Single-flight by key: `deduplication({...})` (dedup.ts; see `DeduplicationOptions`). Without it an
   * `enqueue` with a `dedupKey` is refused with a TypeError.
   * @default undefined (none)
   * @example new ExecutorPool({ deduplication: deduplication({ ttl: 5_000 }) })
   */
  deduplication?: DeduplicationCompanion;
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
} as const;

export function resolvePoolOptions(options: ExecutorPoolOptions): ResolvedPoolOptions {
  const timeout = nonNegative('timeout', options.timeout ?? POOL_DEFAULTS.timeout);
  return {
    ...resolveRetryOptions(options),
    timeout: timeout === 0 ? Number.POSITIVE_INFINITY : timeout,
    maxQueueSize: nonNegative('maxQueueSize', options.maxQueueSize ?? POOL_DEFAULTS.maxQueueSize),
  };
}

/** The concurrency a pool starts at: the option, or with `'auto'` its tuner's `initialConcurrency`. */
export function startingConcurrency(options: ExecutorPoolOptions): number {
  let concurrency: number;
  if (options.concurrency === 'auto') {
    if (options.autotune === undefined) {
      throw new TypeError("concurrency 'auto' needs a tuner: { concurrency: 'auto', autotune: autotune() }");
    }
    concurrency = options.autotune.initialConcurrency;
  } else {
    concurrency = options.concurrency ?? POOL_DEFAULTS.concurrency;
  }
  assertConcurrency(concurrency);
  return concurrency;
}

/** The factory each companion option takes, for the TypeError an options object (or anything else) gets. */
const COMPANION_FACTORIES = {
  circuitBreaker: ['createBreaker', 'circuitBreaker({ threshold: 0.5 })'],
  deduplication: ['createDeduplication', 'deduplication({ ttl: 60_000 })'],
  autotune: ['attachTuner', 'autotune({ maxConcurrency: 200 })'],
} as const;

/** Throws a TypeError naming the option when a companion option holds something other than its factory. */
export function assertCompanions(options: ExecutorPoolOptions): void {
  for (const [key, [method, example]] of Object.entries(COMPANION_FACTORIES)) {
    const value = options[key as keyof typeof COMPANION_FACTORIES];
    if (value === undefined) continue;
    const isObject = typeof value === 'object' && value !== null;
    if (!isObject || typeof (value as unknown as Record<string, unknown>)[method] !== 'function') {
      const got = isObject ? 'an options object' : String(value);
      throw new TypeError(`${key} takes a companion, e.g. ${key}: ${example} from 's3-ingest', got ${got}`);
    }
  }
}
