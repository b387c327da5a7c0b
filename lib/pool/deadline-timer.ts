import { IndexedHeap } from './indexed-heap.js';

/** What the timer needs from an entry. `timerIndex` is owned by the timer (-1 when not scheduled). */
export interface DeadlineEntry {
  /** `performance.now()` time at which the entry expires. */
  deadline: number;
  timerIndex: number;
}

/**
 * Many deadlines, one `setTimeout`: a min-heap on `deadline` plus a single timer armed for the earliest one.
 * Adding a later deadline (the usual case: equal timeouts started in order) never touches the timer;
 * removing an entry leaves the timer armed (an early wake-up just re-arms). The timer is cleared when
 * nothing is scheduled so it never keeps the process alive by itself.
 */
export class DeadlineTimer<T extends DeadlineEntry> {
  readonly #heap = new IndexedHeap<T>(
    (a, b) => a.deadline < b.deadline,
    (entry, index) => {
      entry.timerIndex = index;
    },
  );
  readonly #onExpire: (entry: T) => void;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #armedFor = Number.POSITIVE_INFINITY;

  constructor(onExpire: (entry: T) => void) {
    this.#onExpire = onExpire;
  }

  get size(): number {
    return this.#heap.size;
  }

  add(entry: T): void {
    this.#heap.push(entry);
    if (entry.deadline < this.#armedFor) this.#arm(entry.deadline);
  }

  remove(entry: T): void {
    if (!this.#heap.holds(entry, entry.timerIndex)) return;
    this.#heap.removeAt(entry.timerIndex);
    if (this.#heap.size === 0) this.#disarm();
  }

  /** Removes every entry without firing. */
  clear(): T[] {
    const entries = this.#heap.clear();
    this.#disarm();
    return entries;
  }

  #arm(at: number): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#armedFor = at;
    this.#timer = setTimeout(this.#fire, Math.max(0, at - performance.now()));
  }

  #disarm(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedFor = Number.POSITIVE_INFINITY;
  }

  readonly #fire = (): void => {
    this.#timer = undefined;
    this.#armedFor = Number.POSITIVE_INFINITY;
    const heap = this.#heap;
    const now = performance.now();
    for (let entry = heap.peek(); entry !== undefined && entry.deadline <= now; entry = heap.peek()) {
      heap.removeAt(0);
      this.#onExpire(entry);
    }
    const next = heap.peek();
    // An expiry callback may have scheduled entries (and armed for them); make sure the earliest is covered.
    if (next !== undefined && next.deadline < this.#armedFor) this.#arm(next.deadline);
    else if (next === undefined) this.#disarm();
  };
}
