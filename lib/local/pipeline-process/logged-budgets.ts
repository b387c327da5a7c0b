import type { RateBudgetFactory } from '../../ingest/handler/run/rate-holder.js';
import type { LeaseReport, RateBudget, RateLease, TakeOptions } from '../../semaphore/rate-types.js';
import type { EventLog } from './event-log.js';
import type { HeldPermits } from './logged-semaphores.js';

/**
 * Wraps a rate-budget factory (`FLEET_CAP=rate`) so every grant and release is logged (`rate-take` after
 * the take, `rate-release` before the call) and every lease counted in `held` (one per lease, per budget
 * name): the grants of every process, killed ones included, can then be rebuilt from the logs and held
 * against the writes S3 accepted.
 */
export function loggedBudgets(
  base: RateBudgetFactory,
  log: EventLog,
  container: number,
  held: HeldPermits,
): RateBudgetFactory {
  return (name, ceiling) => {
    const budget = base(name, ceiling);
    return {
      name: budget.name,
      ceiling: budget.ceiling,
      async take(want: number, options: TakeOptions): Promise<RateLease> {
        const lease = await budget.take(want, options);
        held.add(name, 1);
        const { rate, fence, expiresAt } = lease;
        log.write({ event: 'rate-take', container, name, ceiling, rate, fence, expiresAt });
        let released = false;
        return {
          rate,
          fence,
          takenAt: lease.takenAt,
          expiresAt,
          async release(report: LeaseReport, releaseOptions?: { readonly signal?: AbortSignal }) {
            if (!released) {
              released = true;
              held.add(name, -1);
              log.write({ event: 'rate-release', container, name, rate, fence });
            }
            await lease.release(report, releaseOptions);
          },
        };
      },
    } satisfies RateBudget;
  };
}
