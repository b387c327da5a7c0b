/**
 * Time as the S3 behaviour model and its users see it. Injecting it lets tests and benchmarks run the
 * model on virtual time (exact, no waiting) and production-like runs on the wall clock.
 */
export interface Clock {
  /** Milliseconds since an arbitrary origin; only differences matter. */
  now(): number;
  /** Resolves after `ms`; rejects with `signal.reason` when the signal aborts first (or is already aborted). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/** The wall clock: `Date.now()` and timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep(ms, signal) {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortReason(signal));
        return;
      }
      const onAbort = () => {
        clearTimeout(timer);
        reject(abortReason(signal!));
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  },
};

interface Sleeper {
  until: number;
  resolve: () => void;
}

/**
 * A clock that only moves when told to (`advance`/`set`). Sleepers wake, in deadline order, as time passes
 * their deadline; for exact, instant tests of anything that takes a `Clock`.
 */
export class ManualClock implements Clock {
  #now: number;
  #sleepers: Sleeper[] = [];

  constructor(startMs = 0) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(abortReason(signal));
        return;
      }
      const sleeper: Sleeper = {
        until: this.#now + Math.max(0, ms),
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.#sleepers = this.#sleepers.filter((s) => s !== sleeper);
        reject(abortReason(signal!));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#sleepers.push(sleeper);
      if (ms <= 0) this.#wake();
    });
  }

  /** Moves time forward by `ms` and wakes every sleeper whose deadline has passed. */
  advance(ms: number): void {
    this.set(this.#now + ms);
  }

  /** Sets the time (never backwards) and wakes every sleeper whose deadline has passed. */
  set(nowMs: number): void {
    this.#now = Math.max(this.#now, nowMs);
    this.#wake();
  }

  /** Number of pending sleeps (lets a test wait until its subject is parked on the clock). */
  get pendingSleeps(): number {
    return this.#sleepers.length;
  }

  #wake(): void {
    const due = this.#sleepers.filter((s) => s.until <= this.#now).sort((a, b) => a.until - b.until);
    if (due.length === 0) return;
    this.#sleepers = this.#sleepers.filter((s) => s.until > this.#now);
    for (const s of due) s.resolve();
  }
}
