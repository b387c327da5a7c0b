import { type AttemptSettled, AttemptSettlers } from './attempt-settlers.js';
import { DeadlineTimer } from './deadline-timer.js';
import { TaskTimeoutError } from './errors.js';
import type { Attempt } from './task-state.js';

/**
 * The attempts in flight: it calls a task's function, watches the work it returns, and times the attempt
 * out on one shared timer. The running attempts form an intrusive doubly linked list through
 * `Attempt.prev`/`next` (O(1) to add and remove, no allocation), which `stop()` walks to abort them all.
 * The scheduler decides what a settled or timed-out attempt means (`onSettled`, `onTimedOut`).
 */
export class AttemptRunner {
  readonly #timeouts = new DeadlineTimer<Attempt>((attempt) => this.#timedOut(attempt));
  readonly #settlers: AttemptSettlers;
  readonly #onTimedOut: (attempt: Attempt, error: TaskTimeoutError) => void;
  #head: Attempt | undefined = undefined;

  constructor(onSettled: AttemptSettled, onTimedOut: (attempt: Attempt, error: TaskTimeoutError) => void) {
    this.#settlers = new AttemptSettlers(onSettled);
    this.#onTimedOut = onTimedOut;
  }

  /** The most recently started attempt still running; follow `next` for the others. */
  get head(): Attempt | undefined {
    return this.#head;
  }

  /** `attempt` holds a slot from now on: on the running list, and on the timer when its timeout is finite. */
  track(attempt: Attempt): void {
    const head = this.#head;
    attempt.next = head;
    if (head !== undefined) head.prev = attempt;
    this.#head = attempt;
    const timeout = attempt.timeoutMs;
    if (timeout > 0 && timeout !== Number.POSITIVE_INFINITY) this.#timeouts.add(attempt);
  }

  /** Calls the task's function for `attempt` and watches what it returns. */
  invoke(attempt: Attempt): void {
    let result: unknown;
    try {
      result = attempt.task.fn(attempt);
    } catch (error) {
      // Settle asynchronously like a rejected promise, so a synchronous thrower cannot recurse through pump.
      result = Promise.reject(error);
    }
    // Promise.resolve returns a native promise as is and adopts anything else (a value, a thenable, a Promise
    // subclass) the way `await` does, so its own `then` runs later, at most once, and a throw from it rejects
    // the attempt.
    this.#settlers.watch(attempt, Promise.resolve(result));
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

  #timedOut(attempt: Attempt): void {
    if (attempt.detached) return;
    attempt.detached = true;
    const error = new TaskTimeoutError(attempt.timeoutMs);
    attempt.abort(error);
    // The slot stays held until the work settles, so nothing new can start here.
    this.#onTimedOut(attempt, error);
  }
}
