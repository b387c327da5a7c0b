import { PoolStoppedError, TaskAbortedError } from './errors.js';
import type { EnqueueOptions, TaskContext, TaskFn } from './task.js';

/** Summary of `processWithPool()`. Results are handed to `onResult` and never accumulated. */
export interface ProcessSummary {
  /** Items whose task succeeded. */
  processed: number;
  /** Items whose task finally failed. */
  failed: number;
  /** The first failures (up to `keepErrors`), with the item's index in the input. */
  errors: { index: number; error: unknown }[];
}

/** Options of `processWithPool()`: the per-task options apply to every item. */
export interface ProcessOptions<I, R> extends Omit<EnqueueOptions, 'dedupKey' | 'id'> {
  /**
   * Called with each successful result, in completion order. A throw stops reading and rejects `processWithPool()`.
   * @default undefined
   * @example { onResult: (record, item) => written.add(item.id) }
   */
  onResult?: (result: R, item: I, index: number) => void;
  /**
   * Called with each final failure, in completion order. A throw stops reading and rejects `processWithPool()`.
   * @default undefined
   * @example { onError: (error, item) => deadLetters.push({ item, error }) }
   */
  onError?: (error: unknown, item: I, index: number) => void;
  /**
   * Items read ahead beyond the pool's concurrency.
   * @default min(concurrency, maxQueueSize)
   * @example { readAhead: 0 } // read an item only when a slot is free
   */
  readAhead?: number;
  /**
   * Stop reading input after the first failure (in-flight items still finish).
   * @default false
   * @example { stopOnError: true }
   */
  stopOnError?: boolean;
  /**
   * How many failures `ProcessSummary.errors` keeps.
   * @default 10
   * @example { keepErrors: 100 }
   */
  keepErrors?: number;
}

/**
 * What `processWithPool()` needs from a pool: its public face. `ExecutorPool` implements it; anything else that
 * does (a test double, a wrapper) can be driven the same way.
 */
export interface ProcessTarget {
  readonly concurrency: number;
  readonly maxQueueSize: number;
  readonly isStopped: boolean;
  /** Whether `enqueue` would refuse a task with QueueFullError now. */
  readonly isQueueFull: boolean;
  enqueue<T>(fn: TaskFn<T>, options?: EnqueueOptions): Promise<T>;
  /** Resolves when the queue has room again (at once if it has) or the pool stopped. */
  onQueueRoom(): Promise<void>;
}

/**
 * Feeds `input` through `pool` with back-pressure: an item is read only while fewer than
 * `concurrency + readAhead` of this call's items are unfinished, and never into a full queue. Resolves to
 * counts when every item read has settled; rejects with PoolStoppedError / TaskAbortedError if the pool
 * stopped or `signal` aborted before the input was exhausted, or with the error a callback threw.
 */
export async function processWithPool<I, R>(
  pool: ProcessTarget,
  input: Iterable<I> | AsyncIterable<I>,
  fn: (item: I, ctx: TaskContext) => Promise<R> | R,
  options: ProcessOptions<I, R> = {},
): Promise<ProcessSummary> {
  if (pool.isStopped) throw new PoolStoppedError();
  const { onResult, onError, readAhead, stopOnError = false, keepErrors = 10, ...enqueueOptions } = options;
  const signal = enqueueOptions.signal;
  const summary: ProcessSummary = { processed: 0, failed: 0, errors: [] };
  let inFlight = 0;
  let wake: (() => void) | undefined;
  let callbackError: { error: unknown } | undefined;
  const settledOne = () => {
    inFlight -= 1;
    const w = wake;
    wake = undefined;
    w?.();
  };
  const waitForOne = () =>
    new Promise<void>((resolve) => {
      wake = resolve;
    });
  const limit = () => pool.concurrency + Math.min(readAhead ?? pool.concurrency, pool.maxQueueSize);
  const isAsync = Symbol.asyncIterator in input;
  const iterator = isAsync
    ? (input as AsyncIterable<I>)[Symbol.asyncIterator]()
    : (input as Iterable<I>)[Symbol.iterator]();
  let index = 0;
  let exhausted = false;
  try {
    reading: for (;;) {
      while (inFlight >= limit()) await waitForOne();
      if (pool.isStopped || signal?.aborted || callbackError !== undefined) break;
      if (stopOnError && summary.failed > 0) break;
      while (pool.isQueueFull) {
        await pool.onQueueRoom();
        if (pool.isStopped) break reading;
      }
      const step = isAsync ? await (iterator as AsyncIterator<I>).next() : (iterator as Iterator<I>).next();
      if (step.done) {
        exhausted = true;
        break;
      }
      const item = step.value;
      const i = index++;
      inFlight += 1;
      pool
        .enqueue((ctx) => fn(item, ctx), enqueueOptions)
        .then(
          (result) => {
            summary.processed += 1;
            try {
              onResult?.(result, item, i);
            } catch (error) {
              callbackError ??= { error };
            }
            settledOne();
          },
          (error: unknown) => {
            summary.failed += 1;
            if (summary.errors.length < keepErrors) summary.errors.push({ index: i, error });
            try {
              onError?.(error, item, i);
            } catch (callbackFailure) {
              callbackError ??= { error: callbackFailure };
            }
            settledOne();
          },
        );
    }
  } finally {
    if (!exhausted) await iterator.return?.();
    while (inFlight > 0) await waitForOne();
  }
  if (callbackError !== undefined) throw callbackError.error;
  if (!exhausted && !(stopOnError && summary.failed > 0)) {
    if (signal?.aborted) throw new TaskAbortedError('process() aborted', { cause: signal.reason });
    if (pool.isStopped) throw new PoolStoppedError();
  }
  return summary;
}
