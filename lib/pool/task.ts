// What a caller hands the pool for one task and what the task function receives.

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

/** Per-task options of `ExecutorPool.enqueue`. Bad values reject the call with a RangeError naming the field. */
export interface EnqueueOptions {
  /**
   * Higher runs first; equal priorities run in enqueue order. A finite number.
   * @default 0
   * @example pool.enqueue(readUserFacing, { priority: 10 })
   */
  priority?: number;
  /**
   * Per-attempt timeout in ms, overriding the pool's `timeout`; `0` or `Infinity` disables it for this task.
   * @default the pool's `timeout`
   * @example pool.enqueue(bigUpload, { timeout: 120_000 })
   */
  timeout?: number;
  /**
   * Retries after the first attempt for this task, overriding the pool's `retries`.
   * @default the pool's `retries`
   * @example pool.enqueue(notIdempotent, { retries: 0 })
   */
  retries?: number;
  /**
   * Calls with the same key while one is pending share its single execution (and its result or error). Needs
   * a pool with `deduplication` (a TypeError otherwise); see `DeduplicationOptions`.
   * @default undefined (no deduplication, unless the pool's `deduplication.keyFn` derives a key)
   * @example pool.enqueue(() => load(id), { dedupKey: `load:${id}` })
   */
  dedupKey?: string;
  /**
   * Aborting rejects a queued or backing-off task at once (it is removed) and aborts a running one (its
   * caller is rejected at once; its slot is freed when the work settles). Many tasks may share one signal
   * (an invocation's deadline): the pool listens to it once, not once per task.
   * @default undefined
   * @example pool.enqueue(write, { signal: AbortSignal.timeout(context.getRemainingTimeInMillis() - 500) })
   */
  signal?: AbortSignal;
  /**
   * Whether this task's attempts are spaced by `ExecutorPool.setStartInterval`. A pool paced at a write rate
   * runs its reads unpaced when the service limits reads apart from writes: a read spaced like a write both
   * wastes the write rate's slots and lets writes bunch up behind it (several writes queued at once after
   * their reads). Unpaced tasks still count against the concurrency cap.
   * @default true
   * @example pool.enqueue(() => store.get(key), { paced: false })
   */
  paced?: boolean;
  /**
   * Shown in `TaskContext.id` and in events.
   * @default a pool-assigned sequence number
   * @example pool.enqueue(write, { id: record.messageId })
   */
  id?: string;
}
