/** What the queue needs from an entry. `queueIndex` is owned by the queue (-1 when not queued). */
export interface PriorityQueueEntry {
  readonly priority: number;
  /** Insertion sequence, strictly increasing: the FIFO tie-break among equal priorities. */
  readonly seq: number;
  queueIndex: number;
}

/**
 * Binary max-heap on (priority desc, seq asc). push/pop/remove are O(log n); pushing equal priorities in
 * order costs one comparison (a new entry never rises past an older equal one), so the common
 * "everything at priority 0" load pays almost nothing for the heap.
 */
export class PriorityQueue<T extends PriorityQueueEntry> {
  readonly #heap: T[] = [];

  get size(): number {
    return this.#heap.length;
  }

  peek(): T | undefined {
    return this.#heap[0];
  }

  push(entry: T): void {
    const heap = this.#heap;
    heap.push(entry);
    this.#siftUp(entry, heap.length - 1);
  }

  pop(): T | undefined {
    const heap = this.#heap;
    const top = heap[0];
    if (top === undefined) return undefined;
    const last = heap.pop()!;
    if (last !== top) this.#siftDown(last, 0);
    top.queueIndex = -1;
    return top;
  }

  /** Removes `entry` if queued; returns whether it was. */
  remove(entry: T): boolean {
    const heap = this.#heap;
    const index = entry.queueIndex;
    if (index < 0 || heap[index] !== entry) return false;
    const last = heap.pop()!;
    entry.queueIndex = -1;
    if (last !== entry) {
      if (index > 0 && before(last, heap[(index - 1) >> 1]!)) this.#siftUp(last, index);
      else this.#siftDown(last, index);
    }
    return true;
  }

  /** Empties the queue, returning the entries (in no particular order). */
  clear(): T[] {
    const entries = this.#heap.splice(0);
    for (const entry of entries) entry.queueIndex = -1;
    return entries;
  }

  #siftUp(entry: T, index: number): void {
    const heap = this.#heap;
    while (index > 0) {
      const parentIndex = (index - 1) >> 1;
      const parent = heap[parentIndex]!;
      if (!before(entry, parent)) break;
      heap[index] = parent;
      parent.queueIndex = index;
      index = parentIndex;
    }
    heap[index] = entry;
    entry.queueIndex = index;
  }

  #siftDown(entry: T, index: number): void {
    const heap = this.#heap;
    const length = heap.length;
    const half = length >> 1;
    while (index < half) {
      let childIndex = 2 * index + 1;
      let child = heap[childIndex]!;
      const rightIndex = childIndex + 1;
      if (rightIndex < length) {
        const right = heap[rightIndex]!;
        if (before(right, child)) {
          childIndex = rightIndex;
          child = right;
        }
      }
      if (!before(child, entry)) break;
      heap[index] = child;
      child.queueIndex = index;
      index = childIndex;
    }
    heap[index] = entry;
    entry.queueIndex = index;
  }
}

function before(a: PriorityQueueEntry, b: PriorityQueueEntry): boolean {
  return a.priority > b.priority || (a.priority === b.priority && a.seq < b.seq);
}
