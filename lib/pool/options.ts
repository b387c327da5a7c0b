import type { AutotuneOptions } from './autotune/options.js';
import type { ConcurrencyBudget } from './concurrency-budget.js';
import { DEFAULT_RETRYABLE_ERRORS } from './retry-policy.js';

/** What a task function receives. Pass `signal` down to the I/O (e.g. `client.send(cmd, { abortSignal })`). */
export interface TaskContext {
  /** Aborted when the attempt times out, the caller's signal aborts, or the pool stops. Created on first read. */
  readonly signal: AbortSignal;
  /** 1 for the first attempt, 2 for the first retry, ... */
  readonly attempt: number;
  /** The task id: `EnqueueOptions.id`, or one the pool assigned. */
  readonly id: string;
}

export type TaskFn<T> = (ctx: TaskContext) => Promise<T> | T;

/** How retry delays are randomised. */
export type JitterMode = 'full' | 'decorrelated' | 'none';

export interface CircuitBreakerOptions {
  /** Default `false`. */
  enabled?: boolean;
  /** Failure ratio (0..1] over the window that opens the breaker. Default `0.5`. */
  threshold?: number;
  /** No decision before this many calls were recorded in the window. Default `10`. */
  minimumRequests?: number;
  /** How many recent attempts the failure ratio looks at. Default `max(100, minimumRequests)`. */
  windowSize?: number;
  /** Milliseconds the breaker stays open before half-opening. Default `60000`. */
  timeout?: number;
  /** Probe attempts allowed while half-open; all must succeed to close again. Default `5`. */
  halfOpenRequests?: number;
}

export interface DeduplicationOptions {
  /** Default `true`: explicit `dedupKey`s are honoured. `false` ignores them. */
  enabled?: boolean;
  /** Derives a key for calls without `dedupKey`; return `undefined` for "do not deduplicate". Default none. */
  keyFn?: (task: { readonly fn: TaskFn<unknown>; readonly options: EnqueueOptions }) => string | undefined;
  /** A pending execution is joined only while younger than this many ms. Default `60000`. */
  ttl?: number;
}

export interface ExecutorPoolOptions {
  /**
   * Maximum attempts in flight (timed-out work still counts until it settles). Integer >= 1, or `'auto'`:
   * the autotuner (see `autotune`) finds the level itself from latency, throttling and memory. Default `10`.
   */
  concurrency?: number | 'auto';
  /**
   * Adaptive concurrency (lib/pool/autotune). On with `concurrency: 'auto'` (starting from
   * `autotune.initialConcurrency`, default 10) or with `autotune.enabled: true` (starting from the numeric
   * `concurrency`). Default: off.
   */
  autotune?: AutotuneOptions;
  /** Retries after the first attempt, for retryable errors only. Default `3`. */
  retries?: number;
  /** Base backoff in ms (attempt n waits up to `retryDelay * 2^(n-1)`). Default `1000`. */
  retryDelay?: number;
  /** Cap on a single backoff in ms. Default `20000`. */
  maxRetryDelay?: number;
  /** Backoff randomisation. Default `'full'` (uniform in [0, capped exponential]). */
  jitter?: JitterMode;
  /**
   * Error `name`s or `code`s that are retryable, in addition to the built-in rules (HTTP 429/500/502/503/504,
   * `$retryable`, network resets, our TimeoutError/AbortError). Default {@link DEFAULT_RETRYABLE_ERRORS}.
   */
  retryableErrors?: readonly string[];
  /** Per-attempt timeout in ms; `0` or `Infinity` disables it. Default `30000`. */
  timeout?: number;
  /** Queued tasks beyond this make `enqueue` reject with QueueFullError. Default `Infinity`. */
  maxQueueSize?: number;
  /** Default disabled. */
  circuitBreaker?: CircuitBreakerOptions;
  /** Default: explicit `dedupKey`s honoured, no `keyFn`. */
  deduplication?: DeduplicationOptions;
  /** A budget shared with other pools; a task starts only when this pool is under its cap AND the budget grants. */
  budget?: ConcurrencyBudget;
  /** Starts paused (call `resume()`). Default `false`. */
  paused?: boolean;
}

export interface EnqueueOptions {
  /** Higher runs first; equal priorities run in enqueue order. Default `0`. */
  priority?: number;
  /** Per-attempt timeout in ms, overriding the pool's; `0` or `Infinity` disables it for this task. */
  timeout?: number;
  /** Retries for this task, overriding the pool's. */
  retries?: number;
  /** Calls with the same key while one is pending share its single execution (and its result or error). */
  dedupKey?: string;
  /** Aborting rejects a queued or backing-off task at once (it is removed) and aborts a running one. */
  signal?: AbortSignal;
  /** Shown in `TaskContext.id` and events. Default: a pool-assigned sequence number. */
  id?: string;
}

/** Resolved pool options: every default filled in. */
export interface ResolvedPoolOptions {
  readonly retries: number;
  readonly retryDelay: number;
  readonly maxRetryDelay: number;
  readonly jitter: JitterMode;
  readonly retryableErrors: readonly string[];
  readonly timeout: number;
  readonly maxQueueSize: number;
}

export const POOL_DEFAULTS = {
  concurrency: 10,
  retries: 3,
  retryDelay: 1000,
  maxRetryDelay: 20_000,
  jitter: 'full',
  timeout: 30_000,
  maxQueueSize: Number.POSITIVE_INFINITY,
  circuitBreaker: { threshold: 0.5, minimumRequests: 10, timeout: 60_000, halfOpenRequests: 5 },
  deduplicationTtl: 60_000,
} as const;

export function assertConcurrency(n: number, what = 'concurrency'): void {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`${what} must be an integer >= 1, got ${n}`);
}

function nonNegative(name: string, value: number): number {
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0) {
    throw new RangeError(`${name} must be a number >= 0, got ${value}`);
  }
  return value;
}

export function resolvePoolOptions(options: ExecutorPoolOptions): ResolvedPoolOptions {
  const timeout = nonNegative('timeout', options.timeout ?? POOL_DEFAULTS.timeout);
  const jitter = options.jitter ?? POOL_DEFAULTS.jitter;
  if (jitter !== 'full' && jitter !== 'decorrelated' && jitter !== 'none') {
    throw new RangeError(`jitter must be 'full', 'decorrelated' or 'none', got ${String(jitter)}`);
  }
  return {
    retries: nonNegative('retries', options.retries ?? POOL_DEFAULTS.retries),
    retryDelay: nonNegative('retryDelay', options.retryDelay ?? POOL_DEFAULTS.retryDelay),
    maxRetryDelay: nonNegative('maxRetryDelay', options.maxRetryDelay ?? POOL_DEFAULTS.maxRetryDelay),
    jitter,
    retryableErrors: options.retryableErrors ?? DEFAULT_RETRYABLE_ERRORS,
    timeout: timeout === 0 ? Number.POSITIVE_INFINITY : timeout,
    maxQueueSize: nonNegative('maxQueueSize', options.maxQueueSize ?? POOL_DEFAULTS.maxQueueSize),
  };
}
