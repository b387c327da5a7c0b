/** Options of `ExecutorPool.setStartInterval` beyond the interval: how a schedule of slots is kept. */
export interface StartIntervalOptions {
  /**
   * How late a paced start may be and still keep its slot, so the starts behind it catch up (a busy event
   * loop then costs no rate); after a longer pause the schedule restarts at the late start.
   * @default half the interval
   * @example 20
   */
  readonly catchUpMs?: number;
  /**
   * How many paced starts may go from now (slots booked elsewhere; retries count); once spent, paced tasks
   * wait for the next call that gives more. `Infinity` lifts the bound.
   * @default the allowance stays as it is (unbounded until first set)
   * @example 40
   */
  readonly starts?: number;
  /**
   * The allowance lapses this long from now (the end of the booked slots), however many starts are left.
   * @default never, for a new allowance; an old one keeps its end
   * @example 850
   */
  readonly withinMs?: number;
}

/**
 * The start interval (`ExecutorPool.setStartInterval`): paced attempt starts at least `interval` ms apart, a
 * cap on the rate of starts on top of the cap on attempts in flight. At most one pending timer, none when
 * the interval is 0, so an unpaced pool pays nothing.
 */
export class StartPacer {
  #intervalMs = 0;
  /** How late a start may be and still keep its slot (undefined: half an interval). */
  #catchUpMs: number | undefined;
  /** Paced starts left before the pacer holds every paced task (Infinity: no such bound). */
  #allowance = Number.POSITIVE_INFINITY;
  /** `performance.now()` after which the allowance has lapsed (Infinity: never). */
  #lapsesAt = Number.POSITIVE_INFINITY;
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

  /** Paced starts left before the pacer holds (Infinity: no bound). */
  get allowance(): number {
    return this.#allowance;
  }

  /**
   * Sets the interval, how late a start may be and still keep its slot (`catchUpMs`, default half the
   * interval), and, when given, how many paced starts may go from now (`starts`: a booking of slots; the
   * rest wait for the next call; omitted, the allowance stays) and for how long (`withinMs`: then it
   * lapses, however many are left; omitted, a new allowance never lapses and an old one keeps its end). Returns whether a held start may now go
   * sooner (a shorter interval, or a larger allowance); a pending timer re-checks the wait when it fires,
   * so a longer interval needs nothing more.
   */
  setInterval(ms: number, catchUpMs?: number, starts?: number, withinMs?: number): boolean {
    if (!(ms >= 0 && Number.isFinite(ms))) {
      throw new RangeError(`startInterval must be a finite number >= 0, got ${ms}`);
    }
    if (catchUpMs !== undefined && !(catchUpMs >= 0 && Number.isFinite(catchUpMs))) {
      throw new RangeError(`catchUpMs must be a finite number >= 0, got ${catchUpMs}`);
    }
    if (
      starts !== undefined &&
      !(starts >= 0 && (Number.isInteger(starts) || starts === Number.POSITIVE_INFINITY))
    ) {
      throw new RangeError(`starts must be a whole number >= 0 or Infinity, got ${starts}`);
    }
    if (withinMs !== undefined && !(withinMs >= 0)) {
      throw new RangeError(`withinMs must be a number of ms >= 0, got ${withinMs}`);
    }
    this.#catchUpMs = catchUpMs;
    const lapsesAt =
      withinMs !== undefined
        ? performance.now() + withinMs
        : starts !== undefined
          ? Number.POSITIVE_INFINITY
          : this.#lapsesAt;
    const more = (starts !== undefined && starts > this.#allowance) || lapsesAt > this.#lapsesAt;
    if (starts !== undefined) this.#allowance = starts;
    this.#lapsesAt = lapsesAt;
    const shorter = ms < this.#intervalMs;
    this.#intervalMs = ms;
    if (shorter) this.cancel();
    return shorter || more;
  }

  /**
   * Whether the pacer holds a paced start back at `now`: the allowance is spent (until the next
   * `setInterval`), or the interval has not passed (a timer then calls `onDue` when it has).
   */
  holds(now: number): boolean {
    if (this.#allowance <= 0 || now > this.#lapsesAt) return true;
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
    this.#allowance -= 1;
  }

  /** Drops the pending timer, if any. */
  cancel(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
