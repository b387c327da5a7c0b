/**
 * What one round of writes saw, for the control law (`nextRate`): a holder's writes since its last cut,
 * or a whole booking at its report.
 * @example { accepted: 40, throttled: 0, starved: true }
 */
export interface WriteRound {
  /** Writes the service accepted. */
  readonly accepted: number;
  /** Writes the service refused as throttled (S3 SlowDown, 503). */
  readonly throttled: number;
  /**
   * Demand exceeded the budget: the booking's first slot was later than its request (it queued), or it
   * held fewer slots than asked (`spanMs` ended its round first).
   */
  readonly starved: boolean;
}

/** Options of one `RateBooking.step`. */
export interface StepOptions {
  /** Aborts the step and every request of it. */
  readonly signal?: AbortSignal;
  /**
   * Follow an increase made since the booking as well as a decrease: the holder paces at the schedule's rate
   * from now, and the booking's later steps and report start from it. For a booking at its first slot,
   * whose window of slots then holds that many more writes (docs/fleet-cap.md#what-a-holder-does).
   * @default false (only a decrease is followed: the pace never rises within a booking's writes)
   */
  readonly followIncrease?: boolean;
}

/** What a booking's writes saw, reported when its slots are over: the control law moves the budget by it. */
export type BookingReport = WriteRound;

/** A schedule's rate and last decrease as a report left them. */
export interface ScheduleView {
  /** Writes per second (before the caller's ceiling). */
  readonly rate: number;
  /** Epoch ms of the last decrease (0: never). */
  readonly decreasedAt: number;
}

/** Options of one `RateBudget.book`. */
export interface BookOptions {
  /** Writes to book (a whole number >= 1): one start slot each. */
  readonly writes: number;
  /**
   * Epoch ms: the latest first slot worth having. When the budget's schedule is booked past it, `book`
   * rejects at once with `SemaphoreTimeoutError` whose `freeAt` says when the first free slot is.
   */
  readonly latestStart: number;
  /**
   * Epoch ms after which no write of the holder starts (the invocation's cutoff): the slots end by then, and
   * fewer than `writes` are booked when not all fit.
   */
  readonly writeBy: number;
  /**
   * Epoch ms: the earliest first slot of use, when the answer is expected to take that long (a holder
   * whose last booking's answer came after its slots had passed). Slots before it are left to others.
   * @default now
   * @example Date.now() + lastBookingMs
   */
  readonly earliestStart?: number;
  /**
   * The longest the slots may span while the rate climbs (the schedule never decreased and under the
   * ceiling), ms (one slot at least, whatever the rate): fewer than `writes` are booked past it. A holder
   * books a round of the control law (`ROUND_MS`) at a time then and reports each, so slow start doubles
   * a low rate as often as a high one. Once the rate has found its limit every write asked is booked, and
   * holders write one after the other instead of taking turns a round each.
   * @default Infinity
   * @example ROUND_MS
   */
  readonly spanMs?: number;
  /**
   * Aborts the call and every request of it.
   * @default a `TimeoutError` at `writeBy`
   */
  readonly signal?: AbortSignal;
}

/**
 * Slots booked in a prefix's schedule: `writes` starts, one every `1000 / rate` ms from `startAt`. Nothing is
 * held: slots a holder does not use pass unused, so a holder that crashes, or a booking whose answer was
 * lost, costs the fleet at most its own slots and never lets the prefix exceed its rate.
 */
export interface RateBooking {
  /** Writes per second the slots are spaced at: the budget's rate when booked. */
  readonly rate: number;
  /** Epoch ms of the first slot. */
  readonly startAt: number;
  /** Epoch ms the slots end (`startAt + writes / rate`). */
  readonly endsAt: number;
  /** Slots booked: the request's `writes`, or fewer when not all fit before its `writeBy` or in its `spanMs`. */
  readonly writes: number;
  /** Epoch ms the booking was made. */
  readonly bookedAt: number;
  /** Whether the first slot is later than the request: others had booked ahead (demand above the budget). */
  readonly queued: boolean;
  /**
   * Applies the control law to a round of the booking's writes now (docs/fleet-cap.md): a holder steps an
   * overloaded round early, and steps an empty round to read where the schedule stands. A step that moves
   * nothing writes nothing; one whose budget moved since the booking is dropped (no stale steps), and a
   * decrease is taken once per round of bookings. Resolves the schedule's rate and last decrease as they
   * stand after it; rejects with `signal`'s reason or the store's error when it cannot finish.
   */
  step(round: WriteRound, options?: StepOptions): Promise<ScheduleView>;
  /**
   * Reports the whole booking once its writes have settled: a `step` of the whole round, made once (later
   * calls return the first call's promise, unless it failed). Nothing else depends on it.
   */
  report(report: BookingReport, options?: { readonly signal?: AbortSignal }): Promise<void>;
}

/** A prefix's fleet-wide write budget, kept as a schedule of start slots (docs/fleet-cap.md). */
export interface RateBudget {
  /** What the budget is for, e.g. `prefix:bucket/t=acme/`. */
  readonly name: string;
  /** The most writes per second the budget may reach (`S3_PREFIX_WRITE_RATE`). */
  readonly ceiling: number;
  /**
   * Books `options.writes` start slots at the budget's rate, from the first free slot (now, when the
   * schedule is free). Rejects with `SemaphoreTimeoutError` (`freeAt`: the first free slot) when that is after
   * `options.latestStart` or no slot fits before `options.writeBy`, with the signal's reason when it aborts;
   * a lost race with another booking reads again after a jittered backoff.
   */
  book(options: BookOptions): Promise<RateBooking>;
}
