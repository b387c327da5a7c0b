import type { RateBudgetFactory } from '../../lib/ingest/handler/run/rate-holder.js';
import { SemaphoreTimeoutError } from '../../lib/semaphore/errors.js';
import type { LeaseReport, RateBudget, RateLease, TakeOptions } from '../../lib/semaphore/rate-types.js';

/** Takes and releases of rate budgets, summed: what the rate engine did in a cell. */
export interface BudgetCounts {
  takes: number;
  granted: number;
  /** Takes that ended with `SemaphoreTimeoutError` (the tenant's records deferred or redelivered). */
  timedOut: number;
  /** ... of which rejected at once: the holders in the way were due past the taker's deadline. */
  timedOutAtOnce: number;
  /** Takes that failed otherwise (aborted at the cutoff, the store unreachable). */
  failed: number;
  /** Sums over the granted takes: the rate asked for, the least rate, the rate granted (writes/s), the wait (ms). */
  wantSum: number;
  leastSum: number;
  grantSum: number;
  waitMsSum: number;
  releases: number;
  /** Sums over the releases' reports, and releases that were starved. */
  accepted: number;
  throttled: number;
  starved: number;
  /** Lease held, take to release, summed (ms). */
  heldMsSum: number;
}

/** The counts of every prefix and of the hot one. */
export interface BudgetTrace {
  all: BudgetCounts;
  hot: BudgetCounts;
}

const zero = (): BudgetCounts => ({
  takes: 0,
  granted: 0,
  timedOut: 0,
  timedOutAtOnce: 0,
  failed: 0,
  wantSum: 0,
  leastSum: 0,
  grantSum: 0,
  waitMsSum: 0,
  releases: 0,
  accepted: 0,
  throttled: 0,
  starved: 0,
  heldMsSum: 0,
});

const round = (n: number) => Math.round(n * 1000) / 1000;

/**
 * Wraps a rate-budget factory so every take and release is counted (`trace`), and those of budget
 * `hotName` are also written one per line through `line` (the cell's trace file).
 */
export function traceBudgets(
  inner: RateBudgetFactory,
  hotName: string,
  line: (entry: object) => void,
): { factory: RateBudgetFactory; trace: BudgetTrace } {
  const trace: BudgetTrace = { all: zero(), hot: zero() };
  const factory: RateBudgetFactory = (name, ceiling) => {
    const budget = inner(name, ceiling);
    const hot = name === hotName;
    const counts = hot ? [trace.all, trace.hot] : [trace.all];
    const add = (f: (c: BudgetCounts) => void) => {
      for (const c of counts) f(c);
    };
    return {
      name: budget.name,
      ceiling: budget.ceiling,
      take: async (want: number, options: TakeOptions): Promise<RateLease> => {
        const started = Date.now();
        add((c) => c.takes++);
        const asked = {
          want: round(want),
          least: round(options.least),
          writes: options.writes,
          waitForMs: options.deadline - started,
        };
        let lease: RateLease;
        try {
          lease = await budget.take(want, options);
        } catch (error) {
          const waitedMs = Date.now() - started;
          if (error instanceof SemaphoreTimeoutError) {
            add((c) => c.timedOut++);
            if (error.freeAt !== undefined) add((c) => c.timedOutAtOnce++);
            if (hot)
              line({
                take: { ...asked, waitedMs, timedOut: true, freeAtIn: (error.freeAt ?? started) - started },
              });
          } else {
            add((c) => c.failed++);
            if (hot) line({ take: { ...asked, waitedMs, failed: (error as Error).name } });
          }
          throw error;
        }
        const waitedMs = Date.now() - started;
        add((c) => {
          c.granted++;
          c.wantSum += want;
          c.leastSum += options.least;
          c.grantSum += lease.rate;
          c.waitMsSum += waitedMs;
        });
        if (hot) line({ take: { ...asked, waitedMs, rate: round(lease.rate), fence: lease.fence } });
        return {
          rate: lease.rate,
          fence: lease.fence,
          takenAt: lease.takenAt,
          expiresAt: lease.expiresAt,
          release: async (report: LeaseReport, releaseOptions?: { readonly signal?: AbortSignal }) => {
            add((c) => {
              c.releases++;
              c.accepted += report.accepted;
              c.throttled += report.throttled;
              if (report.starved) c.starved++;
              c.heldMsSum += Date.now() - lease.takenAt;
            });
            if (hot)
              line({
                release: {
                  fence: lease.fence,
                  rate: round(lease.rate),
                  heldMs: Date.now() - lease.takenAt,
                  ...report,
                },
              });
            await lease.release(report, releaseOptions);
          },
        };
      },
    } satisfies RateBudget;
  };
  return { factory, trace };
}
