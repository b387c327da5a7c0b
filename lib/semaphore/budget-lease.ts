import { withAbortReason } from './abort-reason.js';
import { type BudgetHolder, onRateGrid } from './budget-item.js';
import type { BudgetStore } from './budget-store.js';
import { checkReport } from './rate-budget-checks.js';
import { nextRate } from './rate-law.js';
import type { LeaseReport, RateLease } from './rate-types.js';

/** What a lease needs of the budget it was taken from. */
export interface BudgetContext {
  readonly name: string;
  readonly ceiling: number;
  readonly store: BudgetStore;
  readonly now: () => number;
  /** Bound on a release without a signal, and on giving back a take whose answer was lost. */
  readonly giveBackTimeoutMs: number;
}

/**
 * A held share of a budget. Its release moves the budget by the control law from the budget the take read
 * (`read`), in the write that gives the rate back: stepped only while the budget is still `read`, and a
 * decrease only when none happened since the grant; otherwise the rate goes back with no step. A lease
 * that expired and was reclaimed frees nothing.
 */
export class BudgetLease implements RateLease {
  readonly rate: number;
  readonly takenAt: number;
  readonly expiresAt: number;
  #releasing: Promise<void> | undefined;

  constructor(
    private readonly budget: BudgetContext,
    readonly fence: string,
    holder: BudgetHolder,
    /** The budget the take read: the release's step starts from it. */
    private readonly read: number,
    /** When the budget the take read was last decreased (epoch ms): no increase for a while after it. */
    private readonly readDecreasedAt = 0,
  ) {
    this.rate = holder.r;
    this.takenAt = holder.at;
    this.expiresAt = holder.until;
  }

  async release(report: LeaseReport, options: { readonly signal?: AbortSignal } = {}): Promise<void> {
    // A bad report rejects (never throws): callers of a promise-returning release catch on the promise.
    checkReport(this.budget.name, report);
    this.#releasing ??= this.#release(report, options.signal).catch((err: unknown) => {
      // A release that did not finish may be tried again (the lease expires anyway).
      this.#releasing = undefined;
      throw err;
    });
    return this.#releasing;
  }

  async #release(report: LeaseReport, signal: AbortSignal | undefined): Promise<void> {
    const { store, ceiling, now, giveBackTimeoutMs } = this.budget;
    const bound = signal ?? AbortSignal.timeout(giveBackTimeoutMs);
    const after = onRateGrid(nextRate(this.read, report, ceiling, now() - this.readDecreasedAt));
    await withAbortReason(
      bound,
      (async () => {
        if (after !== this.read) {
          const decrease = after < this.read ? { decrease: { now: now(), takenAt: this.takenAt } } : {};
          const step = { read: this.read, after, ...decrease };
          if (await store.stepRelease(this.fence, this.rate, step, bound)) return;
        }
        // `false`: the lease was reclaimed after it expired, so it has nothing left to free.
        await store.release(this.fence, this.rate, bound);
      })(),
    );
  }
}
