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
  readonly #heap: T[] = [];
  readonly #onExpire: (entry: T) => void;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #armedFor = Number.POSITIVE_INFINITY;

  constructor(onExpire: (entry: T) => void) {
    this.#onExpire = onExpire;
  }

  get size(): number {
    return this.#heap.length;
  }

  add(entry: T): void {
    const heap = this.#heap;
    heap.push(entry);
    this.#siftUp(entry, heap.length - 1);
    if (entry.deadline < this.#armedFor) this.#arm(entry.deadline);
  }

  remove(entry: T): void {
    const heap = this.#heap;
    const index = entry.timerIndex;
    if (index < 0 || heap[index] !== entry) return;
    const last = heap.pop()!;
    entry.timerIndex = -1;
    if (last !== entry) {
      if (index > 0 && last.deadline < heap[(index - 1) >> 1]!.deadline) this.#siftUp(last, index);
      else this.#siftDown(last, index);
    }
    if (heap.length === 0) this.#disarm();
  }

  /** Removes every entry without firing. */
  clear(): T[] {
    const entries = this.#heap.splice(0);
    for (const entry of entries) entry.timerIndex = -1;
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
    while (heap.length > 0 && heap[0]!.deadline <= now) {
      const entry = heap[0]!;
      this.remove(entry);
      this.#onExpire(entry);
    }
    const next = heap[0];
    // An expiry callback may have scheduled entries (and armed for them); make sure the earliest is covered.
    if (next !== undefined && next.deadline < this.#armedFor) this.#arm(next.deadline);
  };

  #siftUp(entry: T, index: number): void {
    const heap = this.#heap;
    while (index > 0) {
      const parentIndex = (index - 1) >> 1;
      const parent = heap[parentIndex]!;
      if (parent.deadline <= entry.deadline) break;
      heap[index] = parent;
      parent.timerIndex = index;
      index = parentIndex;
    }
    heap[index] = entry;
    entry.timerIndex = index;
  }

  #siftDown(entry: T, index: number): void {
    const heap = this.#heap;
    const length = heap.length;
    const half = length >> 1;
    while (index < half) {
      let childIndex = 2 * index + 1;
      let child = heap[childIndex]!;
      const rightIndex = childIndex + 1;
      if (rightIndex < length && heap[rightIndex]!.deadline < child.deadline) {
        childIndex = rightIndex;
        child = heap[rightIndex]!;
      }
      if (child.deadline >= entry.deadline) break;
      heap[index] = child;
      child.timerIndex = index;
      index = childIndex;
    }
    heap[index] = entry;
    entry.timerIndex = index;
  }
}
