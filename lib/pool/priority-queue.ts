import { IndexedHeap } from './indexed-heap.js';

/** What the queue needs from an entry. `queueIndex` is owned by the queue (-1 when not queued). */
export interface PriorityQueueEntry {
  readonly priority: number;
  queueIndex: number;
}

/** All queued entries of one priority, FIFO. Slots of removed entries are skipped lazily. */
class Bucket<T extends PriorityQueueEntry> {
  items: (T | undefined)[] = [];
  /** When each entry of `items` was queued, at the same index: an array of numbers V8 keeps unboxed. */
  times: number[] = [];
  head = 0;
  /** Absolute position of items[0]: an entry is live when its queueIndex equals offset + its array index. */
  offset = 0;
  live = 0;
  heapIndex = -1;
  constructor(readonly priority: number) {}
}

const COMPACT_MIN = 1024;

/**
 * Priority queue: a binary max-heap of priority levels, each level a FIFO array. Enqueue is O(1) when
 * the level exists and O(log P) when it is new (P = distinct priorities queued, P <= n); dequeue is O(1)
 * amortised plus O(log P) when a level empties; `remove` is O(1) (the slot is skipped later and reclaimed
 * by compaction). Equal priorities come out in insertion order. Compared with one heap over all entries
 * this never walks log n levels of a 100k-entry heap per dequeue, which is where a plain heap loses to a
 * linked list.
 */
export class PriorityQueue<T extends PriorityQueueEntry> {
  readonly #levels = new Map<number, Bucket<T>>();
  readonly #heap = new IndexedHeap<Bucket<T>>(
    (a, b) => a.priority > b.priority,
    (bucket, index) => {
      bucket.heapIndex = index;
    },
  );
  #size = 0;
  #lastPushed: Bucket<T> | undefined;
  /** When the entry `pop` returned last was queued (the `queuedAt` it was pushed with). */
  poppedQueuedAt = 0;

  get size(): number {
    return this.#size;
  }

  /** Queues `entry`; `queuedAt` (a time) comes back as `poppedQueuedAt` when it is popped. */
  push(entry: T, queuedAt = 0): void {
    const priority = entry.priority;
    let bucket = this.#lastPushed;
    if (bucket === undefined || bucket.priority !== priority || bucket.heapIndex < 0) {
      bucket = this.#levels.get(priority);
      if (bucket === undefined) {
        bucket = new Bucket<T>(priority);
        this.#levels.set(priority, bucket);
        this.#heap.push(bucket);
      }
      this.#lastPushed = bucket;
    }
    entry.queueIndex = bucket.offset + bucket.items.length;
    bucket.items.push(entry);
    bucket.times.push(queuedAt);
    bucket.live += 1;
    this.#size += 1;
  }

  peek(): T | undefined {
    const bucket = this.#heap.peek();
    if (bucket === undefined) return undefined;
    this.#skipStale(bucket);
    return bucket.items[bucket.head];
  }

  pop(): T | undefined {
    const bucket = this.#heap.peek();
    if (bucket === undefined) return undefined;
    this.#skipStale(bucket);
    const entry = bucket.items[bucket.head]!;
    this.poppedQueuedAt = bucket.times[bucket.head]!;
    bucket.items[bucket.head] = undefined;
    bucket.head += 1;
    entry.queueIndex = -1;
    bucket.live -= 1;
    this.#size -= 1;
    if (bucket.live === 0) this.#dropLevel(bucket);
    else if (bucket.head >= COMPACT_MIN && bucket.head * 2 >= bucket.items.length) this.#dropConsumed(bucket);
    return entry;
  }

  /** Removes `entry` if queued; returns whether it was. */
  remove(entry: T): boolean {
    if (entry.queueIndex < 0) return false;
    const bucket = this.#levels.get(entry.priority);
    if (bucket === undefined || bucket.items[entry.queueIndex - bucket.offset] !== entry) return false;
    bucket.items[entry.queueIndex - bucket.offset] = undefined;
    entry.queueIndex = -1;
    bucket.live -= 1;
    this.#size -= 1;
    if (bucket.live === 0) this.#dropLevel(bucket);
    else if (bucket.items.length >= COMPACT_MIN && bucket.live * 2 < bucket.items.length - bucket.head) {
      this.#compact(bucket);
    }
    return true;
  }

  /** Empties the queue, returning the entries in dequeue order. */
  clear(): T[] {
    const entries: T[] = [];
    for (let entry = this.pop(); entry !== undefined; entry = this.pop()) entries.push(entry);
    return entries;
  }

  #skipStale(bucket: Bucket<T>): void {
    while (bucket.items[bucket.head] === undefined) bucket.head += 1;
  }

  /**
   * Drops the consumed slots before `head`. The entries after it keep their absolute positions (`offset`
   * moves by what was dropped), so none is touched: a long queue's entries are spread over the heap, and
   * rewriting each one's `queueIndex` here cost a cache miss per entry (removed slots stay until `head` passes).
   */
  #dropConsumed(bucket: Bucket<T>): void {
    bucket.items = bucket.items.slice(bucket.head);
    bucket.times = bucket.times.slice(bucket.head);
    bucket.offset += bucket.head;
    bucket.head = 0;
  }

  /** Drops consumed and removed slots, renumbering the live entries. */
  #compact(bucket: Bucket<T>): void {
    const live: T[] = [];
    const times: number[] = [];
    for (let i = bucket.head; i < bucket.items.length; i++) {
      const entry = bucket.items[i];
      if (entry === undefined) continue;
      live.push(entry);
      times.push(bucket.times[i]!);
    }
    bucket.offset += bucket.items.length;
    for (let i = 0; i < live.length; i++) live[i]!.queueIndex = bucket.offset + i;
    bucket.items = live;
    bucket.times = times;
    bucket.head = 0;
  }

  #dropLevel(bucket: Bucket<T>): void {
    this.#levels.delete(bucket.priority);
    this.#heap.removeAt(bucket.heapIndex);
  }
}
