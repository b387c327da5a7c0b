// The task state machine's records: what the scheduler (executor-pool.ts) keeps per task and per attempt.
// Kept small and monomorphic: a long queue is made of `Task`s, and every attempt allocates one `Attempt`.
import type { Backoff } from '../backoff/index.js';
import type { SignalGroup, SignalMember } from './signal-groups.js';
import type { TaskContext, TaskFn } from './task.js';

export const QUEUED = 0;
export const RUNNING = 1;
export const BACKOFF = 2;
export const DONE = 3;

export const noop = (): void => {};

/**
 * Rarely needed per-task data, allocated only when a task uses one of these features. It is also the
 * task's entry in the group of its caller's signal (`SignalGroups`), so a signal costs no closure per task.
 */
export class TaskExtras implements SignalMember<TaskExtras> {
  dedupKey: string | undefined = undefined;
  /** The task's last retry wait; its `next()` is the wait before the next retry. */
  retryWait: Backoff | undefined = undefined;
  backoff: BackoffEntry | undefined = undefined;
  current: Attempt | undefined = undefined;
  group: SignalGroup<TaskExtras> | undefined = undefined;
  prevMember: TaskExtras | undefined = undefined;
  nextMember: TaskExtras | undefined = undefined;

  constructor(
    readonly task: Task,
    readonly id: string | undefined,
    readonly timeout: number | undefined,
    readonly retries: number | undefined,
    readonly signal: AbortSignal | undefined,
  ) {}
}

/**
 * A queued task. Kept deliberately small (it is what a long queue is made of): the caller's promise, its
 * resolve function (reject goes through resolve, so V8 can drop the reject function) and heap bookkeeping.
 */
export class Task {
  queueIndex = -1;
  attempts = 0;
  state = QUEUED;
  resolve: (value: unknown) => void = noop;
  promise: Promise<unknown> | undefined = undefined;
  extras: TaskExtras | undefined = undefined;
  /** Spaced by the pool's start interval (`EnqueueOptions.paced`). */
  paced = true;

  constructor(
    readonly fn: TaskFn<unknown>,
    readonly priority: number,
    readonly seq: number,
    public enqueuedAt: number,
  ) {}

  get id(): string {
    return this.extras?.id ?? `${this.seq}`;
  }

  /** The extras, created on first need (a retry of a plain task needs `retryWait` and `backoff`). */
  needExtras(): TaskExtras {
    this.extras ??= new TaskExtras(this, undefined, undefined, undefined, undefined);
    return this.extras;
  }
}

/** A retrying task waiting out its backoff (on the shared backoff timer). */
export class BackoffEntry {
  timerIndex = -1;
  timerPrev: BackoffEntry | undefined = undefined;
  timerNext: BackoffEntry | undefined = undefined;
  constructor(
    readonly task: Task,
    public deadline: number,
  ) {}
}

/** One attempt of a task; also the context handed to the task function. */
export class Attempt implements TaskContext {
  timerIndex = -1;
  timerPrev: Attempt | undefined = undefined;
  timerNext: Attempt | undefined = undefined;
  /** The caller was already answered (timeout, abort, stop); the attempt only holds its slot until it settles. */
  detached = false;
  prev: Attempt | undefined = undefined;
  next: Attempt | undefined = undefined;
  #controller: AbortController | undefined = undefined;
  #abortReason: unknown = undefined;

  constructor(
    readonly task: Task,
    readonly attempt: number,
    readonly startedAt: number,
    readonly probe: boolean,
    readonly timeoutMs: number,
  ) {}

  get id(): string {
    return this.task.id;
  }

  /** When the attempt times out (computed: one stored time per attempt is one number object fewer). */
  get deadline(): number {
    return this.startedAt + this.timeoutMs;
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#abortReason !== undefined) this.#controller.abort(this.#abortReason);
    }
    return this.#controller.signal;
  }

  abort(reason: unknown): void {
    if (this.#controller !== undefined) this.#controller.abort(reason);
    else this.#abortReason = reason;
  }
}
