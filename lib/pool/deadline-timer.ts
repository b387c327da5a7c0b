import { IndexedHeap } from './indexed-heap.js';

/** `timerIndex` of an entry held in the in-order list rather than the heap. */
const IN_ORDER = -2;

/** What the timer needs from an entry. The `timer*` fields are owned by the timer. */
export interface DeadlineEntry<T> {
  /** `performance.now()` time at which the entry expires (a field or a getter; read, never written). */
  readonly deadline: number;
  /** Position in the timer's heap; -1 when not scheduled. */
  timerIndex: number;
  timerPrev: T | undefined;
  timerNext: T | undefined;
}

/**
 * Many deadlines, one `setTimeout`. Entries that arrive in deadline order (the usual case: attempts with
 * the pool's one timeout, started in order) go to a FIFO list: adding and removing them is O(1), with no
 * comparisons. An entry that would land before the list's tail (a shorter per-task timeout, a random
 * backoff) goes to a min-heap instead. Expiry takes the earlier of the two heads. The single timer is
 * re-armed only when an earlier deadline arrives; removing an entry leaves it armed (an early wake-up just
 * re-arms), and it is cleared when nothing is scheduled so it never keeps the process alive by itself.
 */
export class DeadlineTimer<T extends DeadlineEntry<T>> {
  readonly #heap = new IndexedHeap<T>(
    (a, b) => a.deadline < b.deadline,
    (entry, index) => {
      entry.timerIndex = index;
    },
  );
  #head: T | undefined = undefined;
  #tail: T | undefined = undefined;
  #listSize = 0;
  readonly #onExpire: (entry: T) => void;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #armedFor = Number.POSITIVE_INFINITY;

  constructor(onExpire: (entry: T) => void) {
    this.#onExpire = onExpire;
  }

  get size(): number {
    return this.#listSize + this.#heap.size;
  }

  add(entry: T): void {
    const deadline = entry.deadline;
    const tail = this.#tail;
    if (tail === undefined || deadline >= tail.deadline) {
      entry.timerIndex = IN_ORDER;
      entry.timerPrev = tail;
      entry.timerNext = undefined;
      if (tail === undefined) this.#head = entry;
      else tail.timerNext = entry;
      this.#tail = entry;
      this.#listSize += 1;
    } else {
      this.#heap.push(entry);
    }
    if (deadline < this.#armedFor) this.#arm(deadline);
  }

  remove(entry: T): void {
    if (entry.timerIndex === IN_ORDER) this.#unlink(entry);
    else if (this.#heap.holds(entry, entry.timerIndex)) this.#heap.removeAt(entry.timerIndex);
    else return;
    if (this.size === 0) this.#disarm();
  }

  /** Removes every entry without firing. */
  clear(): T[] {
    const entries = this.#heap.clear();
    while (this.#head !== undefined) {
      entries.push(this.#head);
      this.#unlink(this.#head);
    }
    this.#disarm();
    return entries;
  }

  #unlink(entry: T): void {
    const { timerPrev: prev, timerNext: next } = entry;
    if (prev === undefined) this.#head = next;
    else prev.timerNext = next;
    if (next === undefined) this.#tail = prev;
    else next.timerPrev = prev;
    entry.timerPrev = undefined;
    entry.timerNext = undefined;
    entry.timerIndex = -1;
    this.#listSize -= 1;
  }

  /** The entry that expires first, if any. */
  #earliest(): T | undefined {
    const listed = this.#head;
    const heaped = this.#heap.peek();
    if (heaped === undefined) return listed;
    if (listed === undefined) return heaped;
    return heaped.deadline < listed.deadline ? heaped : listed;
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
    const now = performance.now();
    for (
      let entry = this.#earliest();
      entry !== undefined && entry.deadline <= now;
      entry = this.#earliest()
    ) {
      if (entry.timerIndex === IN_ORDER) this.#unlink(entry);
      else this.#heap.removeAt(entry.timerIndex);
      this.#onExpire(entry);
    }
    const next = this.#earliest();
    // An expiry callback may have scheduled entries (and armed for them); make sure the earliest is covered.
    if (next !== undefined && next.deadline < this.#armedFor) this.#arm(next.deadline);
    else if (next === undefined) this.#disarm();
  };
}
