// The task state machine's records: what the scheduler (executor-pool.ts) keeps per task and per attempt.
// Kept small and monomorphic: a long queue is made of `Task`s, and every attempt allocates one `AttemptContext`
// (its `Attempt` record is reused).
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
 * resolve function (reject goes through resolve, so V8 can drop the reject function) and the queue's slot.
 * The time it was queued is kept by the queue, next to its slot, as an unboxed number (a `number` field
 * holding a fraction would be a separate heap object per task).
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

/**
 * What a task function receives for one attempt: all that is allocated per attempt, so it holds only what
 * the function can read. The scheduler's bookkeeping of the attempt is its `Attempt` record.
 */
export class AttemptContext implements TaskContext {
  #controller: AbortController | undefined = undefined;

  constructor(
    readonly task: Task,
    readonly attempt: number,
  ) {}

  get id(): string {
    return this.task.id;
  }

  get signal(): AbortSignal {
    this.#controller ??= new AbortController();
    return this.#controller.signal;
  }

  abort(reason: unknown): void {
    // Created here if the function never read its signal: an abort is rare, a read signal is not.
    this.#controller ??= new AbortController();
    this.#controller.abort(reason);
  }
}

/** What a free `Attempt` record points at. */
const VACANT_TASK = new Task(noop, 0, 0);
const VACANT_CONTEXT = new AttemptContext(VACANT_TASK, 0);

/**
 * The scheduler's record of one attempt in flight, from its start until its work settles (a timed-out or
 * aborted attempt keeps its record, and its slot, until then). Records are reused (`AttemptRunner`): one per
 * slot, not one per attempt, so a long run allocates only the `AttemptContext` per attempt. Nothing outside
 * the scheduler holds a record: the task function gets `context`.
 */
export class Attempt {
  task = VACANT_TASK;
  context = VACANT_CONTEXT;
  startedAt = 0;
  timeoutMs = 0;
  /** When the task was queued for this attempt (its queue wait is `startedAt - queuedAt`). */
  queuedAt = 0;
  probe = false;
  /** The caller was already answered (timeout, abort, stop); the attempt only holds its slot until it settles. */
  detached = false;
  timerIndex = -1;
  timerPrev: Attempt | undefined = undefined;
  timerNext: Attempt | undefined = undefined;
  prev: Attempt | undefined = undefined;
  next: Attempt | undefined = undefined;
  /** The next free record while this one is unused. */
  nextFree: Attempt | undefined = undefined;
  /** The work's fulfil and reject callbacks, bound to this record for its whole life (see `AttemptRunner`). */
  readonly fulfilled: (value: unknown) => void;
  readonly rejected: (error: unknown) => void;

  constructor(settled: (attempt: Attempt, value: unknown, error: unknown, failed: boolean) => void) {
    this.fulfilled = (value) => settled(this, value, undefined, false);
    this.rejected = (error) => settled(this, undefined, error, true);
  }

  /** The record now tracks `context`'s attempt of `task`, started at `startedAt`. */
  begin(
    task: Task,
    context: AttemptContext,
    startedAt: number,
    queuedAt: number,
    probe: boolean,
    timeoutMs: number,
  ): void {
    this.task = task;
    this.context = context;
    this.startedAt = startedAt;
    this.queuedAt = queuedAt;
    this.probe = probe;
    this.timeoutMs = timeoutMs;
    this.detached = false;
  }

  /** Which attempt of its task this is: 1 for the first. */
  get attempt(): number {
    return this.context.attempt;
  }

  /** When the attempt times out. */
  get deadline(): number {
    return this.startedAt + this.timeoutMs;
  }

  /** Unused from now on: it points at no caller's task or context, so it keeps neither alive. */
  vacate(): void {
    this.task = VACANT_TASK;
    this.context = VACANT_CONTEXT;
  }
}
