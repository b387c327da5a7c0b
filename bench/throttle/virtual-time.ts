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
}

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

  install(): void {
    const g = globalThis as unknown as Record<string, unknown>;
    g.setTimeout = (fn: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) =>
      new TimerHandle(this.#add(Math.max(0, Number(ms) || 0), () => fn(...args)));
    g.clearTimeout = (handle: unknown) => {
      if (handle instanceof TimerHandle) handle.timer.cancelled = true;
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
    const timer: VirtualTimer = { at: this.#now + ms, seq: ++this.#seq, fn, cancelled: false };
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

  #pop(): VirtualTimer | undefined {
    const heap = this.#heap;
    while (heap.length > 0) {
      const top = heap[0]!;
      const last = heap.pop()!;
      if (heap.length > 0) {
        heap[0] = last;
        let i = 0;
        for (;;) {
          const l = 2 * i + 1;
          const r = l + 1;
          let m = i;
          if (l < heap.length && before(heap[l]!, heap[m]!)) m = l;
          if (r < heap.length && before(heap[r]!, heap[m]!)) m = r;
          if (m === i) break;
          [heap[i], heap[m]] = [heap[m]!, heap[i]!];
          i = m;
        }
      }
      if (!top.cancelled) return top;
    }
    return undefined;
  }
}

function before(a: VirtualTimer, b: VirtualTimer): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}
