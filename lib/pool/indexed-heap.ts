/**
 * A binary heap whose items know their position (through `setIndex`), so any item can be removed in
 * O(log n) without a search. `before(a, b)` is true when `a` must come out first. Used for the shared
 * deadline timer (earliest deadline first) and the priority levels of the queue (highest first).
 */
export class IndexedHeap<T> {
  readonly #items: T[] = [];
  readonly #before: (a: T, b: T) => boolean;
  readonly #setIndex: (item: T, index: number) => void;

  constructor(before: (a: T, b: T) => boolean, setIndex: (item: T, index: number) => void) {
    this.#before = before;
    this.#setIndex = setIndex;
  }

  get size(): number {
    return this.#items.length;
  }

  peek(): T | undefined {
    return this.#items[0];
  }

  push(item: T): void {
    this.#items.push(item);
    this.#siftUp(item, this.#items.length - 1);
  }

  /** Removes the item at `index` (as last given to `setIndex`); it is then given index -1. */
  removeAt(index: number): void {
    const items = this.#items;
    const item = items[index];
    if (item === undefined) return;
    const last = items.pop()!;
    this.#setIndex(item, -1);
    if (last === item) return;
    if (index > 0 && this.#before(last, items[(index - 1) >> 1]!)) this.#siftUp(last, index);
    else this.#siftDown(last, index);
  }

  /** Whether `item` sits at `index`: guards removals by a stale index. */
  holds(item: T, index: number): boolean {
    return index >= 0 && this.#items[index] === item;
  }

  /** Empties the heap, returning the items (in no particular order), each given index -1. */
  clear(): T[] {
    const items = this.#items.splice(0);
    for (const item of items) this.#setIndex(item, -1);
    return items;
  }

  #siftUp(item: T, index: number): void {
    const items = this.#items;
    while (index > 0) {
      const parentIndex = (index - 1) >> 1;
      const parent = items[parentIndex]!;
      if (!this.#before(item, parent)) break;
      items[index] = parent;
      this.#setIndex(parent, index);
      index = parentIndex;
    }
    items[index] = item;
    this.#setIndex(item, index);
  }

  #siftDown(item: T, index: number): void {
    const items = this.#items;
    const length = items.length;
    const half = length >> 1;
    while (index < half) {
      let childIndex = 2 * index + 1;
      let child = items[childIndex]!;
      const rightIndex = childIndex + 1;
      if (rightIndex < length && this.#before(items[rightIndex]!, child)) {
        childIndex = rightIndex;
        child = items[rightIndex]!;
      }
      if (!this.#before(child, item)) break;
      items[index] = child;
      this.#setIndex(child, index);
      index = childIndex;
    }
    items[index] = item;
    this.#setIndex(item, index);
  }
}
