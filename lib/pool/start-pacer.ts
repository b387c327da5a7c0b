/**
 * The start interval (`ExecutorPool.setStartInterval`): paced attempt starts at least `interval` ms apart, a
 * cap on the rate of starts on top of the cap on attempts in flight. At most one pending timer, none when
 * the interval is 0, so an unpaced pool pays nothing.
 */
export class StartPacer {
  #intervalMs = 0;
  /** How late a start may be and still keep its slot (undefined: half an interval). */
  #catchUpMs: number | undefined;
  #lastStartAt = Number.NEGATIVE_INFINITY;
  /** Pending while a paced task waits for the interval to pass. */
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #onDue: () => void;

  /** `onDue` runs when a held-back start may go ahead (the pool pumps its queue). */
  constructor(onDue: () => void) {
    this.#onDue = onDue;
  }

  /** The least ms between two paced starts (0: none). */
  get interval(): number {
    return this.#intervalMs;
  }

  /**
   * Sets the interval, and how late a start may be and still keep its slot (`catchUpMs`, default half the
   * interval); returns whether the interval got shorter, the only change that may start something sooner
   * (a pending timer re-checks the wait when it fires, so a longer one needs nothing more).
   */
  setInterval(ms: number, catchUpMs?: number): boolean {
    if (!(ms >= 0 && Number.isFinite(ms))) {
      throw new RangeError(`startInterval must be a finite number >= 0, got ${ms}`);
    }
    if (catchUpMs !== undefined && !(catchUpMs >= 0 && Number.isFinite(catchUpMs))) {
      throw new RangeError(`catchUpMs must be a finite number >= 0, got ${catchUpMs}`);
    }
    this.#catchUpMs = catchUpMs;
    const shorter = ms < this.#intervalMs;
    this.#intervalMs = ms;
    if (shorter) this.cancel();
    return shorter;
  }

  /** Whether the interval holds a paced start back at `now`; if so, a timer calls `onDue` when it passes. */
  holds(now: number): boolean {
    const wait = this.#lastStartAt + this.#intervalMs - now;
    if (!(wait > 0)) return false;
    this.#timer ??= setTimeout(() => {
      this.#timer = undefined;
      this.#onDue();
    }, Math.ceil(wait));
    return true;
  }

  /**
   * A paced attempt started at `now`. A start late by at most the catch-up (default half an interval: the
   * timer's whole-ms rounding, event-loop lag) is counted at its slot, so lateness does not add up under a
   * busy loop, and the starts behind it catch up. Later than that (an idle pool, a full budget, the in-flight
   * cap) the schedule restarts at it: no burst after a pause.
   * Why: docs/decisions/paced-writes-unpaced-reads.md.
   */
  started(now: number): void {
    const slot = this.#lastStartAt + this.#intervalMs;
    const catchUp = this.#catchUpMs ?? this.#intervalMs / 2;
    this.#lastStartAt = now - slot <= catchUp ? slot : now;
  }

  /** Drops the pending timer, if any. */
  cancel(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
