// What the pool asks of its optional companions: a circuit breaker, single-flight deduplication and a
// concurrency tuner. Each implementation lives in a module of its own (circuit-breaker.ts, dedup.ts,
// autotune/) that only a service which opts in imports; a pool built without them loads none of their code.
// Each option takes a factory (`circuitBreaker({...})`, `deduplication({...})`, `autotune({...})`), so one
// value configures any number of pools, each with its own state.
import type { CircuitState, PoolEvents, PoolListener } from './events.js';
import type { PoolStats } from './pool-metrics.js';
import type { EnqueueOptions, TaskFn } from './task.js';

export type { CircuitState };

/** What the breaker says about starting one attempt now. */
export type Admission = 'run' | 'probe' | 'reject' | 'wait';

/** A pool's circuit breaker (CircuitBreaker in circuit-breaker.ts). */
export interface PoolBreaker {
  readonly state: CircuitState;
  /** Milliseconds until an open breaker half-opens (0 when not open). */
  retryAfter(now: number): number;
  /** Whether new work is refused outright (open and not yet due to half-open). */
  rejects(now: number): boolean;
  admit(now: number): Admission;
  /** Gives back a probe that `admit` granted but that could not start after all. */
  cancelProbe(): void;
  /** Records one finished attempt. `probe` is whether `admit` returned 'probe' for it. */
  record(failed: boolean, probe: boolean, now: number): void;
}

/** `ExecutorPoolOptions.circuitBreaker`: makes one pool's breaker, which reports its state changes. */
export interface BreakerCompanion {
  createBreaker(onChange: (state: CircuitState) => void): PoolBreaker;
}

/** A pool's single-flight registry (SingleFlight in dedup.ts). */
export interface PoolDeduplication {
  /** The key of an `enqueue(fn, options)` call, or none. */
  keyOf(fn: TaskFn<unknown>, options: EnqueueOptions): string | undefined;
  /** The pending execution's outcome for a new caller of `key`, or `undefined`: the caller leads a new one. */
  join(key: string, now: number, signal: AbortSignal | undefined): Promise<unknown> | undefined;
  lead(key: string, promise: Promise<unknown>, now: number): void;
  settle(key: string, promise: Promise<unknown>): void;
  clear(): void;
}

/** `ExecutorPoolOptions.deduplication`: makes one pool's single-flight registry. */
export interface DeduplicationCompanion {
  createDeduplication(): PoolDeduplication;
}

/** What a concurrency tuner needs from a pool (an `ExecutorPool` fits). */
export interface TunablePool {
  readonly concurrency: number;
  setConcurrency(n: number): void;
  getStats(): PoolStats;
  on<K extends keyof PoolEvents>(event: K, listener: PoolListener<K>): unknown;
  off<K extends keyof PoolEvents>(event: K, listener: PoolListener<K>): unknown;
}

/** A tuner attached to a pool (the Autotuner in autotune/): the pool detaches it when it stops. */
export interface PoolTuner {
  detach(): void;
}

/** `ExecutorPoolOptions.autotune`: attaches a tuner to one pool. */
export interface TunerCompanion {
  /** Where a pool with `concurrency: 'auto'` starts. */
  readonly initialConcurrency: number;
  /** The most the tuner ever sets, for sizing what the pool's work uses (sockets, say). */
  readonly maxConcurrency: number;
  attachTuner(pool: TunablePool): PoolTuner;
}
