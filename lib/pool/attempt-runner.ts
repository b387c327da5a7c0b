import { DeadlineTimer } from './deadline-timer.js';
import { TaskTimeoutError } from './errors.js';
import { Attempt, AttemptContext, type Task } from './task-state.js';

/** The scheduler's handler of a settled attempt: `failed` says whether `error` or `value` is the outcome. */
export type AttemptSettled = (attempt: Attempt, value: unknown, error: unknown, failed: boolean) => void;

// The built-in `then`: its reactions run exactly once, even on a promise given an own `then` property. A
// record's callbacks are reused once its work settled, so a second call must never happen.
const promiseThen = Promise.prototype.then;

/**
 * The attempts in flight: it calls a task's function, watches the work it returns, and times the attempt
 * out on one shared timer. The running attempts form an intrusive doubly linked list through
 * `Attempt.prev`/`next` (O(1) to add and remove, no allocation), which `stop()` walks to abort them all.
 * The scheduler decides what a settled or timed-out attempt means (`onSettled`, `onTimedOut`).
 *
 * `Attempt` records are reused (fastq's reusify idea): a record goes back to a free list once the scheduler
 * has handled its settled work, so a pool keeps about one record per slot, each with its fulfil and reject
 * callbacks bound once, and an attempt allocates only the `AttemptContext` its function receives. Its work is
 * watched with the built-in `then`, whose reactions run at most once, so a record's callbacks never fire
 * for a settlement that is not its current attempt's.
 */
export class AttemptRunner {
  readonly #timeouts = new DeadlineTimer<Attempt>((attempt) => this.#timedOut(attempt));
  readonly #onSettled: AttemptSettled;
  readonly #onTimedOut: (attempt: Attempt, error: TaskTimeoutError) => void;
  #head: Attempt | undefined = undefined;
  #free: Attempt | undefined = undefined;

  constructor(onSettled: AttemptSettled, onTimedOut: (attempt: Attempt, error: TaskTimeoutError) => void) {
    this.#onSettled = onSettled;
    this.#onTimedOut = onTimedOut;
  }

  /** The most recently started attempt still running; follow `next` for the others. */
  get head(): Attempt | undefined {
    return this.#head;
  }

  /**
   * Starts attempt number `task.attempts` of `task`: from now on it holds a slot (on the running list, and
   * on the timer when `timeoutMs` is finite). `invoke` then calls its function.
   */
  start(task: Task, now: number, queuedAt: number, probe: boolean, timeoutMs: number): Attempt {
    const context = new AttemptContext(task, task.attempts);
    let attempt = this.#free;
    if (attempt === undefined) attempt = new Attempt(this.#settled);
    else {
      this.#free = attempt.nextFree;
      attempt.nextFree = undefined;
    }
    attempt.begin(task, context, now, queuedAt, probe, timeoutMs);
    const head = this.#head;
    attempt.next = head;
    if (head !== undefined) head.prev = attempt;
    this.#head = attempt;
    if (timeoutMs > 0 && timeoutMs !== Number.POSITIVE_INFINITY) this.#timeouts.add(attempt);
    return attempt;
  }

  /** Calls the task's function for `attempt` and watches what it returns. */
  invoke(attempt: Attempt): void {
    let work: Promise<unknown>;
    try {
      // Promise.resolve returns a native promise as is and adopts anything else (a value, a thenable, a
      // Promise subclass) the way `await` does, so its own `then` runs later, at most once, and a throw from
      // it rejects the attempt. It reads a native promise's `constructor`, which can throw too.
      work = Promise.resolve(attempt.task.fn(attempt.context));
    } catch (error) {
      // Settle asynchronously like a rejected promise, so a synchronous thrower cannot recurse through pump.
      work = Promise.reject(error);
    }
    promiseThen.call(work, attempt.fulfilled, attempt.rejected);
  }

  /** `attempt`'s work settled: off the timer and the running list. */
  release(attempt: Attempt): void {
    if (attempt.timerIndex !== -1) this.#timeouts.remove(attempt);
    if (attempt.prev === undefined) this.#head = attempt.next;
    else attempt.prev.next = attempt.next;
    if (attempt.next !== undefined) attempt.next.prev = attempt.prev;
    attempt.prev = undefined;
    attempt.next = undefined;
  }

  /** A record's work settled: the scheduler handles it, then the record is free for a later attempt. */
  readonly #settled: AttemptSettled = (attempt, value, error, failed) => {
    this.#onSettled(attempt, value, error, failed);
    attempt.vacate();
    attempt.nextFree = this.#free;
    this.#free = attempt;
  };

  #timedOut(attempt: Attempt): void {
    if (attempt.detached) return;
    attempt.detached = true;
    const error = new TaskTimeoutError(attempt.timeoutMs);
    attempt.context.abort(error);
    // The slot stays held until the work settles, so nothing new can start here.
    this.#onTimedOut(attempt, error);
  }
}
