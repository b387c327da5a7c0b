/** One slot's rest after an attempt under fractional concurrency. */
interface Rest {
  readonly durationMs: number;
  readonly finishedAt: number;
  endsAt: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** The rest after an attempt of `durationMs` at `duty`: busy `duty` of the time. Rounded up (timers fire on
 * whole milliseconds; a rest cut short by rounding would oversend). */
function restFor(durationMs: number, duty: number): number {
  return Math.ceil(durationMs * (1 / duty - 1) - 1e-6);
}

/**
 * Fractional concurrency's rests (`ExecutorPool.setConcurrency(0.75)`): each slot is busy at most `duty` of
 * the time, so after an attempt its slot stays taken for the attempt's duration x (1 / duty - 1). A resting
 * slot counts against the cap; at duty 1 (integer concurrency) nothing rests and no timer is set.
 */
export class SlotRests {
  #duty = 1;
  #count = 0;
  readonly #rests = new Set<Rest>();
  readonly #onEnd: () => void;

  /** `onEnd` runs when a rest ends and its slot is free again (the pool pumps its queue). */
  constructor(onEnd: () => void) {
    this.#onEnd = onEnd;
  }

  /** Slots resting now: they start nothing until their rest ends. */
  get count(): number {
    return this.#count;
  }

  /** Whether attempts rest at all (duty below 1). */
  get resting(): boolean {
    return this.#duty < 1;
  }

  /**
   * A new duty. A rest enforces the duty its attempt ended under; once the duty is raised (a new lease
   * granting more, a governor recovering) it ends where the new duty would have ended it: at once, or
   * sooner. Without this a rest from a tiny grant (63 x a slow attempt at 1/64) outlives it and leaves the
   * next lease of the same pool idle for seconds. A lowered duty never lengthens a rest already running.
   */
  setDuty(duty: number): void {
    this.#duty = duty;
    if (this.#rests.size > 0) this.#shorten(performance.now());
  }

  /** An answered attempt of `durationMs` ended at `now`: its slot rests for its share of idle time. */
  rest(durationMs: number, now: number): void {
    const restMs = restFor(durationMs, this.#duty);
    if (!(restMs > 0)) return;
    this.#count += 1;
    const rest: Rest = { durationMs, finishedAt: now, endsAt: now + restMs, timer: undefined };
    this.#rests.add(rest);
    // Not unref'd: queued work waiting for this slot must keep the process alive, as a retry's backoff does.
    rest.timer = setTimeout(() => this.#end(rest), restMs);
  }

  #end(rest: Rest): void {
    if (!this.#rests.delete(rest)) return;
    this.#count -= 1;
    this.#onEnd();
  }

  #shorten(now: number): void {
    for (const rest of this.#rests) {
      const endsAt = rest.finishedAt + restFor(rest.durationMs, this.#duty);
      if (endsAt >= rest.endsAt) continue;
      clearTimeout(rest.timer);
      if (endsAt <= now) {
        this.#rests.delete(rest);
        this.#count -= 1;
        continue;
      }
      rest.endsAt = endsAt;
      rest.timer = setTimeout(() => this.#end(rest), Math.ceil(endsAt - now));
    }
  }
}
