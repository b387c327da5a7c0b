/** The time the handler reads: when an invocation started, and its cutoff timer. */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
  /** Calls `fn` after `ms`; the returned function cancels it. */
  schedule(ms: number, fn: () => void): () => void;
}

/** The wall clock and Node's timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  schedule(ms, fn) {
    const timer = setTimeout(fn, ms);
    return () => clearTimeout(timer);
  },
};
