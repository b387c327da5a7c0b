import { SemaphoreTimeoutError } from '../../../semaphore/errors.js';
import type {
  AcquireOptions,
  Lease,
  LeaseCallOptions,
  LeaseUsage,
  Semaphore,
} from '../../../semaphore/types.js';
import type { SemaphoreFactory } from './tenant-permits.js';

/** What the invocation learns from its semaphore calls. */
export interface SemaphoreObserver {
  /** Time one acquire took, whether it got permits or not. */
  permitWait(ms: number): void;
  /** An acquire or release that failed for a reason other than running out of time or being aborted. */
  semaphoreFailure(error: unknown): void;
}

/**
 * Wraps every semaphore the permit planner builds so the running invocation (`observer()`, read at each
 * call: semaphores are cached per container, invocations are not) sees how long acquires took and which
 * calls failed. Not getting permits by the deadline, or being aborted at the cutoff, is the semaphore
 * doing its job, not a failure. Throttles the SDK retried away inside a call are not seen here.
 */
export function observeSemaphores(
  factory: SemaphoreFactory,
  observer: () => SemaphoreObserver | undefined,
): SemaphoreFactory {
  return (name, limit, ratePerSecond) => new ObservedSemaphore(factory(name, limit, ratePerSecond), observer);
}

class ObservedSemaphore implements Semaphore {
  constructor(
    private readonly inner: Semaphore,
    private readonly observer: () => SemaphoreObserver | undefined,
  ) {}

  get name(): string {
    return this.inner.name;
  }

  get limit(): number {
    return this.inner.limit;
  }

  async acquire(k: number, options?: AcquireOptions): Promise<Lease> {
    const started = performance.now();
    const observer = this.observer();
    try {
      const lease = await this.inner.acquire(k, options);
      return observedLease(lease, observer);
    } catch (error) {
      if (!(error instanceof SemaphoreTimeoutError) && options?.signal?.aborted !== true)
        observer?.semaphoreFailure(error);
      throw error;
    } finally {
      observer?.permitWait(performance.now() - started);
    }
  }
}

/** The lease, with a failed release reported (and still thrown: the planner logs and counts it). */
function observedLease(lease: Lease, observer: SemaphoreObserver | undefined): Lease {
  return {
    get permits() {
      return lease.permits;
    },
    get fence() {
      return lease.fence;
    },
    get expiresAt() {
      return lease.expiresAt;
    },
    // The rate the grant stands for: the handler's governor paces by it.
    get latencyMs() {
      return lease.latencyMs;
    },
    // Options pass through: the planner bounds the release with a signal.
    release: async (options) => {
      try {
        await lease.release(options);
      } catch (error) {
        observer?.semaphoreFailure(error);
        throw error;
      }
    },
    extend: (ms, options) => lease.extend(ms, options),
    // What the work saw goes through to an adaptive semaphore's release.
    report: (usage) => lease.report?.(usage),
    // Only a lease that can resize says it can (the handler watches its work only then); a failed resize
    // is a semaphore failure like a failed release (still thrown: the lease keeps its permits), but one its
    // signal aborted (the cutoff, or its time bound) is not, as for an acquire.
    ...(lease.resize === undefined
      ? {}
      : {
          resize: async (usage: LeaseUsage, options?: LeaseCallOptions) => {
            try {
              return await lease.resize!(usage, options);
            } catch (error) {
              if (options?.signal?.aborted !== true) observer?.semaphoreFailure(error);
              throw error;
            }
          },
        }),
  };
}
