// Simulated time for a benchmark process: replaces setTimeout/clearTimeout, Date.now and performance.now
// with a clock that jumps from one due timer to the next, draining promise reactions in between.
//
// Why not @sinonjs/fake-timers (what vitest uses): its async tick yields to the real event loop with a real
// setTimeout after every fired timer (~1 ms each) and finds the next timer by scanning all of them, so a
// 100k-write run (several timers per write, up to 100k pending at once) would take many minutes. Here the
// timers sit in a binary heap and the yield is a real setImmediate (runs once the microtask queue is empty).

interface VirtualTimer {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
  /** Taken off the heap (fired, or dropped as cancelled): a later clearTimeout has nothing to do. */
  done: boolean;
}

const NOTHING = () => {};
/** Cancelled timers are swept out of the heap once they are at least this many and half of it. */
const SWEEP_AT = 4096;

const realSetImmediate = globalThis.setImmediate;

class TimerHandle {
  constructor(readonly timer: VirtualTimer) {}
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }
  hasRef(): boolean {
    return true;
  }
  refresh(): this {
    return this;
  }
  [Symbol.toPrimitive](): number {
    return this.timer.seq;
  }
}

export class VirtualTime {
  readonly epoch: number;
  #now = 0;
  #seq = 0;
  #heap: VirtualTimer[] = [];
  /** Cancelled timers still in the heap (they are skipped when they come to the top). */
  #cancelled = 0;
  #fired = 0;

  constructor(epoch = Date.now()) {
    this.epoch = epoch;
  }

  /** Simulated milliseconds since install. */
  get now(): number {
    return this.#now;
  }

  get firedTimers(): number {
    return this.#fired;
  }

  /** Timers in the heap: pending ones, plus cancelled ones not swept out yet. */
  get queuedTimers(): number {
    return this.#heap.length;
  }

  install(): void {
    const g = globalThis as unknown as Record<string, unknown>;
    g.setTimeout = (fn: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) =>
      new TimerHandle(this.#add(Math.max(0, Number(ms) || 0), () => fn(...args)));
    g.clearTimeout = (handle: unknown) => {
      if (handle instanceof TimerHandle) this.#cancel(handle.timer);
    };
    Date.now = () => this.epoch + this.#now;
    Object.defineProperty(performance, 'now', { value: () => this.#now, configurable: true, writable: true });
  }

  /** Runs timers in time order until none is left (or `stop()` says so), letting promises settle between. */
  async run(stop: () => boolean = () => false): Promise<void> {
    for (;;) {
      await new Promise<void>((resolve) => realSetImmediate(resolve));
      if (stop()) return;
      const next = this.#pop();
      if (next === undefined) return;
      this.#now = Math.max(this.#now, next.at);
      this.#fire(next);
      // Everything due at the same instant fires before promise reactions get their turn, like Node's timer phase.
      while (this.#heap.length > 0 && this.#heap[0]!.at <= this.#now) {
        const same = this.#pop();
        if (same !== undefined) this.#fire(same);
      }
    }
  }

  #fire(timer: VirtualTimer): void {
    this.#fired += 1;
    timer.fn();
  }

  #add(ms: number, fn: () => void): VirtualTimer {
    const timer: VirtualTimer = { at: this.#now + ms, seq: ++this.#seq, fn, cancelled: false, done: false };
    const heap = this.#heap;
    heap.push(timer);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
    return timer;
  }

  /**
   * Why more than a flag: a cleared timer stays in the heap until its time comes, and its callback keeps
   * alive everything it closes over (a pool's deadline timer holds the whole pool). A simulation shorter
   * than its timeouts (a fleet cell covers seconds; invocation timeouts are 60 s) then kept every
   * invocation's cleared timers, and what they reach, to the end: the callback is dropped at once, and the
   * cancelled entries are swept out once they are half of the heap. Firing order is (at, seq) either way.
   */
  #cancel(timer: VirtualTimer): void {
    if (timer.cancelled || timer.done) return;
    timer.cancelled = true;
    timer.fn = NOTHING;
    this.#cancelled += 1;
    if (this.#cancelled >= SWEEP_AT && 2 * this.#cancelled >= this.#heap.length) this.#sweep();
  }

  /** Drops the cancelled timers and restores the heap order (bottom-up heapify, O(n)). */
  #sweep(): void {
    const heap = this.#heap.filter((t) => !t.cancelled);
    for (const t of this.#heap) if (t.cancelled) t.done = true;
    this.#heap = heap;
    this.#cancelled = 0;
    for (let i = (heap.length >> 1) - 1; i >= 0; i--) siftDown(heap, i);
  }

  #pop(): VirtualTimer | undefined {
    const heap = this.#heap;
    while (heap.length > 0) {
      const top = heap[0]!;
      const last = heap.pop()!;
      if (heap.length > 0) {
        heap[0] = last;
        siftDown(heap, 0);
      }
      top.done = true;
      if (!top.cancelled) return top;
      this.#cancelled -= 1;
    }
    return undefined;
  }
}

function siftDown(heap: VirtualTimer[], from: number): void {
  let i = from;
  for (;;) {
    const l = 2 * i + 1;
    const r = l + 1;
    let m = i;
    if (l < heap.length && before(heap[l]!, heap[m]!)) m = l;
    if (r < heap.length && before(heap[r]!, heap[m]!)) m = r;
    if (m === i) return;
    [heap[i], heap[m]] = [heap[m]!, heap[i]!];
    i = m;
  }
}

function before(a: VirtualTimer, b: VirtualTimer): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}
