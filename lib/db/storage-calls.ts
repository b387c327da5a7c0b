import type { ExecutorPool } from '../pool/index.js';
import { DatabaseNotConnectedError } from './errors.js';

/** Per-call options of every `Resource` method. */
export interface CallOptions {
  /**
   * Aborts the call, queued or in flight (the request and its socket are cancelled).
   * @default undefined (only the pool's per-attempt timeout bounds the call)
   * @example { signal: AbortSignal.timeout(5_000) }
   */
  signal?: AbortSignal;
  /**
   * Pool priority: higher runs first, equal priorities in call order. Ignored without a pool.
   * @default 0
   * @example { priority: 10 }
   */
  priority?: number;
  /**
   * Per-attempt timeout in ms for this call, overriding the pool's; `0` or `Infinity` disables it.
   * @default the pool's `timeout`
   * @example { timeout: 2_000 }
   */
  timeout?: number;
  /**
   * Retries of this call, overriding the pool's.
   * @default the pool's `retries`
   * @example { retries: 0 }
   */
  retries?: number;
}

/** One storage request: given the attempt's signal (pass it to the store) and the attempt number (from 1). */
export type StorageRequest<R> = (signal: AbortSignal | undefined, attempt: number) => Promise<R>;

/**
 * Runs a Database's storage requests: each one a task of its pool (one pool task per S3 request), or
 * straight to storage when the Database has no pool. Shared by the Database's resources; closing it makes
 * every later request reject with `DatabaseNotConnectedError`.
 */
export class StorageCalls {
  #open = true;

  constructor(private readonly pool: ExecutorPool | undefined) {}

  get isOpen(): boolean {
    return this.#open;
  }

  /**
   * Runs one request. A read (`kind: 'read'`) is enqueued unpaced (`EnqueueOptions.paced`): a pool spaced at
   * a prefix's write rate spaces the writes only, since S3 limits reads and writes apart.
   */
  run<R>(request: StorageRequest<R>, call: CallOptions = {}, kind: 'read' | 'write' = 'write'): Promise<R> {
    if (!this.#open) return Promise.reject(new DatabaseNotConnectedError());
    const { signal, priority, timeout, retries } = call;
    if (this.pool === undefined) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      return request(signal, 1);
    }
    return this.pool.enqueue((task) => request(task.signal, task.attempt), {
      ...(signal === undefined ? {} : { signal }),
      ...(priority === undefined ? {} : { priority }),
      ...(timeout === undefined ? {} : { timeout }),
      ...(retries === undefined ? {} : { retries }),
      ...(kind === 'read' ? { paced: false } : {}),
    });
  }

  close(): void {
    this.#open = false;
  }
}
