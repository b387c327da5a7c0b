import { SemaphoreTimeoutError } from '../../../semaphore/errors.js';
import type { RateBudget, RateLease, TakeOptions } from '../../../semaphore/rate-types.js';
import type { SemaphoreObserver } from './observed-semaphores.js';
import type { RateBudgetFactory } from './rate-holder.js';

/**
 * Wraps every rate budget the permit planner builds so the running invocation (`observer()`, read at each
 * call: budgets are cached per container, invocations are not) sees how long takes waited and which calls
 * failed. Not getting a rate by the deadline, or being aborted at the cutoff, is the budget doing its job,
 * not a failure.
 */
export function observeBudgets(
  factory: RateBudgetFactory,
  observer: () => SemaphoreObserver | undefined,
): RateBudgetFactory {
  return (name, ceiling) => {
    const inner = factory(name, ceiling);
    return {
      name: inner.name,
      ceiling: inner.ceiling,
      take: (want, options) => observedTake(inner, want, options, observer()),
    } satisfies RateBudget;
  };
}

async function observedTake(
  budget: RateBudget,
  want: number,
  options: TakeOptions,
  observer: SemaphoreObserver | undefined,
): Promise<RateLease> {
  const started = performance.now();
  try {
    const lease = await budget.take(want, options);
    return {
      rate: lease.rate,
      fence: lease.fence,
      takenAt: lease.takenAt,
      expiresAt: lease.expiresAt,
      release: async (report, releaseOptions) => {
        try {
          await lease.release(report, releaseOptions);
        } catch (error) {
          observer?.semaphoreFailure(error);
          throw error;
        }
      },
    };
  } catch (error) {
    if (!(error instanceof SemaphoreTimeoutError) && options.signal?.aborted !== true)
      observer?.semaphoreFailure(error);
    throw error;
  } finally {
    observer?.permitWait(performance.now() - started);
  }
}
