import type { BackoffStrategy } from '../backoff/index.js';
import { DeadlineTimer } from './deadline-timer.js';
import { BACKOFF, BackoffEntry, type Task } from './task-state.js';

/**
 * Retrying tasks waiting out their backoff on one shared timer, holding no slot. Each task steps its own
 * `Backoff` from the pool's strategy (`retryBackoff` in retry-policy.ts), so a task's second retry waits the
 * strategy's second wait. When a wait ends the task goes back to the pool (`onDone`), which queues it again.
 */
export class RetryWaits {
  readonly #timer = new DeadlineTimer<BackoffEntry>((entry) => this.#end(entry));
  readonly #strategy: BackoffStrategy;
  readonly #onDone: (task: Task) => void;
  #count = 0;

  constructor(strategy: BackoffStrategy, onDone: (task: Task) => void) {
    this.#strategy = strategy;
    this.#onDone = onDone;
  }

  /** Tasks waiting now. */
  get count(): number {
    return this.#count;
  }

  /** How long `task` waits before its next retry: the next step of its backoff. */
  nextDelay(task: Task): number {
    const extras = task.needExtras();
    const wait = extras.retryWait?.next() ?? this.#strategy.next();
    extras.retryWait = wait;
    return wait.duration;
  }

  /** `task` waits `delayMs` from `now` (a wait of 0 or less ends at once). */
  wait(task: Task, delayMs: number, now: number): void {
    this.#count += 1;
    const entry = new BackoffEntry(task, now + delayMs);
    task.needExtras().backoff = entry;
    if (delayMs <= 0) this.#end(entry);
    else this.#timer.add(entry);
  }

  /** `task` stops waiting without going back to the pool (its caller gave up). */
  cancel(task: Task): void {
    const extras = task.extras!;
    if (extras.backoff !== undefined) this.#timer.remove(extras.backoff);
    extras.backoff = undefined;
    this.#count -= 1;
  }

  /** Every waiting task, none of them going back to the pool (the pool stopped). */
  clear(): Task[] {
    const tasks = this.#timer.clear().map((entry) => entry.task);
    this.#count -= tasks.length;
    return tasks;
  }

  #end(entry: BackoffEntry): void {
    const task = entry.task;
    // Never true today: a task leaves BACKOFF only through cancel or clear, which take it off the timer.
    if (task.state !== BACKOFF) return;
    this.#count -= 1;
    task.extras!.backoff = undefined;
    this.#onDone(task);
  }
}
