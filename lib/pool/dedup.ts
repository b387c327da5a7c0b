import type { DeduplicationCompanion, PoolDeduplication } from './companions.js';
import { TaskAbortedError } from './errors.js';
import { type SignalGroup, SignalGroups, type SignalMember } from './signal-groups.js';
import type { EnqueueOptions, TaskFn } from './task.js';

/** Deduplication (single-flight) options: `deduplication(options)`, given to `ExecutorPoolOptions.deduplication`. */
export interface DeduplicationOptions {
  /**
   * Derives a key for `enqueue` calls that pass options but no `dedupKey`; return `undefined` for "do not
   * deduplicate".
   * @default undefined (only explicit `dedupKey`s deduplicate)
   * @example { keyFn: ({ options }) => (options.id !== undefined ? `id:${options.id}` : undefined) }
   */
  keyFn?: (task: { readonly fn: TaskFn<unknown>; readonly options: EnqueueOptions }) => string | undefined;
  /**
   * A pending execution is joined only while younger than this many ms; after that a call with its key
   * starts a new execution.
   * @default 60000
   * @example { ttl: 5_000 }
   */
  ttl?: number;
}

export const DEDUPLICATION_DEFAULTS = { ttl: 60_000 } as const satisfies DeduplicationOptions;

/**
 * Single-flight for `ExecutorPoolOptions.deduplication`: `enqueue` calls with the same `dedupKey` (or `keyFn`
 * key) while one is pending share its execution. Each pool it is given to gets a registry of its own.
 * @example new ExecutorPool({ deduplication: deduplication({ ttl: 5_000 }) })
 */
export function deduplication(options: DeduplicationOptions = {}): DeduplicationCompanion {
  return { createDeduplication: () => new SingleFlight(options) };
}

/** One pending execution of a key. */
interface Flight {
  readonly promise: Promise<unknown>;
  readonly startedAt: number;
}

const noop = (): void => {};

/** A caller that joined a flight with its own signal: it can leave (reject) without touching the flight. */
class Follower implements SignalMember<Follower> {
  group: SignalGroup<Follower> | undefined = undefined;
  prevMember: Follower | undefined = undefined;
  nextMember: Follower | undefined = undefined;
  constructor(readonly reject: (error: unknown) => void) {}
}

/**
 * Single-flight by key: calls with the same key while one is pending share its single execution and its
 * outcome. The pool asks `keyOf` and `join` before queueing, registers the execution it starts with `lead`,
 * and calls `settle` when that execution's task is done. A follower's own `signal` only detaches that
 * follower (rejecting it with TaskAbortedError); the first caller's signal governs the execution.
 */
export class SingleFlight implements PoolDeduplication {
  readonly #flights = new Map<string, Flight>();
  readonly #keyFn: DeduplicationOptions['keyFn'];
  readonly #ttl: number;
  readonly #followers = new SignalGroups<Follower>((follower, signal) =>
    follower.reject(new TaskAbortedError('task aborted by its signal', { cause: signal.reason })),
  );

  constructor(options: DeduplicationOptions = {}) {
    this.#keyFn = options.keyFn;
    this.#ttl = options.ttl ?? DEDUPLICATION_DEFAULTS.ttl;
  }

  /** Pending executions (keys that a call would join now, or that outlived `ttl` and have not settled). */
  get size(): number {
    return this.#flights.size;
  }

  /** The key of an `enqueue(fn, options)` call: its `dedupKey`, else what `keyFn` derives, else none. */
  keyOf(fn: TaskFn<unknown>, options: EnqueueOptions): string | undefined {
    const key = options.dedupKey;
    if (key !== undefined || this.#keyFn === undefined) return key;
    return this.#keyFn({ fn, options });
  }

  /**
   * The shared outcome for a new caller of `key` when a pending execution younger than `ttl` exists (a
   * promise of its own when the caller brings a `signal`), else `undefined`: the caller leads a new one.
   */
  join(key: string, now: number, signal: AbortSignal | undefined): Promise<unknown> | undefined {
    const flight = this.#flights.get(key);
    if (flight === undefined || now - flight.startedAt >= this.#ttl) return undefined;
    return signal === undefined ? flight.promise : this.#follow(flight.promise, signal);
  }

  /** `promise` is now the pending execution of `key` (replacing one that outlived `ttl`). */
  lead(key: string, promise: Promise<unknown>, now: number): void {
    this.#flights.set(key, { promise, startedAt: now });
  }

  /** The execution `promise` of `key` is done: the next call with `key` starts a new one. */
  settle(key: string, promise: Promise<unknown>): void {
    if (this.#flights.get(key)?.promise === promise) this.#flights.delete(key);
  }

  /** Forgets every pending execution (the pool stopped; their callers are rejected by the pool). */
  clear(): void {
    this.#flights.clear();
  }

  #follow(shared: Promise<unknown>, signal: AbortSignal): Promise<unknown> {
    let follower!: Follower;
    const followed = new Promise((resolve, reject) => {
      follower = new Follower(reject);
      shared.then(
        (value) => {
          this.#followers.leave(follower);
          resolve(value);
        },
        (error: unknown) => {
          this.#followers.leave(follower);
          reject(error);
        },
      );
    });
    this.#followers.join(signal, follower);
    followed.catch(noop);
    return followed;
  }
}
