import { withAbortReason } from './abort-reason.js';
import type { BudgetContext } from './budget-store.js';
import { newLeaseId } from './lease-id.js';
import { checkReport } from './rate-budget-checks.js';
import { nextRate } from './rate-law.js';
import { type BookedFrom, onRateGrid, type PlannedBooking, planStep } from './rate-schedule.js';
import type { BookingReport, RateBooking, ScheduleView, StepOptions, WriteRound } from './rate-types.js';

/**
 * Slots booked in a budget's schedule. Each step moves the budget by the control law (`planStep`): read the
 * schedule, and write the step on the condition that it is still the version read; a lost race reads again,
 * and a step another one took meanwhile (the rate moved) drops this one. A decrease seen by a step, its own
 * or another's, is followed: the booking's holder paces at the new rate, and later steps start from it.
 */
export class ScheduledBooking implements RateBooking {
  readonly rate: number;
  readonly startAt: number;
  readonly endsAt: number;
  readonly writes: number;
  readonly bookedAt: number;
  readonly queued: boolean;
  #reporting: Promise<void> | undefined;
  /** The rate this booking's holder paces at and since when: a step starts from it. */
  #from: BookedFrom;

  constructor(
    private readonly budget: BudgetContext,
    plan: PlannedBooking,
    from: BookedFrom,
  ) {
    this.#from = from;
    this.rate = plan.rate;
    this.startAt = plan.startAt;
    this.endsAt = plan.endsAt;
    this.writes = plan.writes;
    this.bookedAt = from.bookedAt;
    this.queued = plan.queued;
  }

  step(round: WriteRound, options: StepOptions = {}): Promise<ScheduleView> {
    try {
      checkReport(this.budget.name, round);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.#step(round, options.signal, options.followIncrease === true);
  }

  report(report: BookingReport, options: { readonly signal?: AbortSignal } = {}): Promise<void> {
    this.#reporting ??= this.#report(report, options.signal).then(
      () => undefined,
      (err: unknown) => {
        // A report that did not finish may be tried again.
        this.#reporting = undefined;
        throw err;
      },
    );
    return this.#reporting;
  }

  /**
   * A round the law holds the rate for moves no schedule (a stale step is dropped, a current one holds), so
   * such a report, most of them, costs nothing (docs/fleet-cap.md#what-a-holder-does).
   */
  async #report(report: BookingReport, signal: AbortSignal | undefined): Promise<void> {
    checkReport(this.budget.name, report);
    const { ceiling } = this.budget;
    if (onRateGrid(nextRate(this.#from.rate, report, ceiling)) === this.#from.rate) return;
    await this.#step(report, signal);
  }

  async #step(
    round: WriteRound,
    signal: AbortSignal | undefined,
    followIncrease = false,
  ): Promise<ScheduleView> {
    const { store, ceiling, now, reportTimeoutMs } = this.budget;
    const bound = signal ?? AbortSignal.timeout(reportTimeoutMs);
    const id = newLeaseId();
    const view = await withAbortReason(
      bound,
      (async (): Promise<ScheduleView> => {
        // Each lost race follows a write that landed; once this step lands (or another one does, or this
        // one did though its answer was lost) the rate has moved and `planStep` has nothing left to do.
        for (;;) {
          const schedule = await store.read(bound);
          if (schedule === undefined) return { rate: this.#from.rate, decreasedAt: 0 };
          const change = planStep(schedule, this.#from, round, ceiling, now());
          if (change === undefined) return { rate: schedule.rate, decreasedAt: schedule.decreasedAt };
          if (await store.write(schedule, change, id, bound))
            return { rate: change.rate, decreasedAt: change.decreasedAt };
        }
      })(),
    );
    // A decrease since the booking (this step's or another's: only a decrease lowers the rate) is followed:
    // the holder paces at it from now, so its next round is measured, and stepped, from there. That pace
    // starts after the decrease even when the clock has not moved on since (or is behind the decreaser's).
    if (view.rate < this.#from.rate)
      this.#from = { rate: view.rate, bookedAt: Math.max(now(), view.decreasedAt + 1) };
    // An increase followed at the first slot: the round from here runs at it, so it is stepped from it.
    else if (followIncrease && view.rate > this.#from.rate) this.#from = { rate: view.rate, bookedAt: now() };
    return view;
  }
}
