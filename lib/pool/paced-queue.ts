import { PriorityQueue, type PriorityQueueEntry } from './priority-queue.js';

/** What the queue needs from a task: its priority, its slot, and whether the start interval spaces it. */
export interface PacedQueueEntry extends PriorityQueueEntry {
  readonly paced: boolean;
}

/**
 * The pool's queue: paced and unpaced tasks in two priority queues. Tasks come out by priority (equal
 * priorities: a paced one first, and each kind in insertion order); while `held` (the start interval holds
 * paced starts back) only unpaced ones come out, so a read is never stuck behind a write waiting for its
 * slot. Why: docs/decisions/paced-writes-unpaced-reads.md.
 */
export class PacedQueue<T extends PacedQueueEntry> {
  readonly #paced = new PriorityQueue<T>();
  readonly #unpaced = new PriorityQueue<T>();
  /** While true, `peek` and `pop` offer only unpaced tasks. Set by the pool before it takes from the queue. */
  held = false;
  /** When the entry `pop` returned last was queued (the `queuedAt` it was pushed with). */
  poppedQueuedAt = 0;

  /** Tasks queued, both kinds. */
  get size(): number {
    return this.#paced.size + this.#unpaced.size;
  }

  /** Paced tasks queued. */
  get pacedSize(): number {
    return this.#paced.size;
  }

  /** Tasks `peek` and `pop` may offer now. */
  get available(): number {
    return this.held ? this.#unpaced.size : this.size;
  }

  /** Queues `entry`; `queuedAt` (a time) comes back as `poppedQueuedAt` when it is popped. */
  push(entry: T, queuedAt = 0): void {
    (entry.paced ? this.#paced : this.#unpaced).push(entry, queuedAt);
  }

  peek(): T | undefined {
    // Only paced tasks queued (the usual pool): no need to compare the two queues' heads.
    if (this.#unpaced.size === 0) return this.held ? undefined : this.#paced.peek();
    return this.#next()?.peek();
  }

  pop(): T | undefined {
    const queue = this.#unpaced.size === 0 ? (this.held ? undefined : this.#paced) : this.#next();
    if (queue === undefined) return undefined;
    const entry = queue.pop();
    this.poppedQueuedAt = queue.poppedQueuedAt;
    return entry;
  }

  remove(entry: T): boolean {
    return (entry.paced ? this.#paced : this.#unpaced).remove(entry);
  }

  clear(): T[] {
    return [...this.#paced.clear(), ...this.#unpaced.clear()];
  }

  #next(): PriorityQueue<T> | undefined {
    const unpaced = this.#unpaced.peek();
    if (this.held) return unpaced === undefined ? undefined : this.#unpaced;
    const paced = this.#paced.peek();
    if (paced === undefined) return unpaced === undefined ? undefined : this.#unpaced;
    return unpaced !== undefined && unpaced.priority > paced.priority ? this.#unpaced : this.#paced;
  }
}
