import type { SemaphoreFactory } from '../../ingest/handler/run/tenant-permits.js';
import type { AcquireOptions, Lease, LeaseUsage, Semaphore } from '../../semaphore/types.js';
import type { EventLog } from './event-log.js';

/** Permits one container holds right now, per semaphore name and over all of them. */
export class HeldPermits {
  total = 0;
  readonly #byName = new Map<string, number>();

  /** Permits held now on semaphore `name` (0: none). */
  on(name: string): number {
    return this.#byName.get(name) ?? 0;
  }

  add(name: string, permits: number): void {
    this.total += permits;
    const left = this.on(name) + permits;
    if (left === 0) this.#byName.delete(name);
    else this.#byName.set(name, left);
  }
}

/**
 * Wraps a semaphore factory so every grant and release is logged (`acquire` after the grant, `release`
 * before the call) and counted in `held`: the timeline of holders can then be rebuilt from the logs of
 * every process, killed ones included.
 */
export function loggedSemaphores(
  base: SemaphoreFactory,
  log: EventLog,
  container: number,
  held: HeldPermits,
): SemaphoreFactory {
  return (name, limit, ratePerSecond) => {
    const semaphore = base(name, limit, ratePerSecond);
    return {
      name: semaphore.name,
      limit: semaphore.limit,
      async acquire(k: number, options?: AcquireOptions): Promise<Lease> {
        const lease = await semaphore.acquire(k, options);
        held.add(name, lease.permits);
        log.write({
          event: 'acquire',
          container,
          name,
          limit,
          permits: lease.permits,
          fence: lease.fence,
          expiresAt: lease.expiresAt,
        });
        let released = false;
        return {
          permits: lease.permits,
          fence: lease.fence,
          get expiresAt() {
            return lease.expiresAt;
          },
          // The rate the grant stands for: the handler's governor paces by it, as it does in Lambda.
          get latencyMs() {
            return lease.latencyMs;
          },
          async release() {
            if (!released) {
              released = true;
              held.add(name, -lease.permits);
              log.write({ event: 'release', container, name, permits: lease.permits, fence: lease.fence });
            }
            await lease.release();
          },
          extend: (ms: number) => lease.extend(ms),
          report: (usage: LeaseUsage) => lease.report?.(usage),
        };
      },
    } satisfies Semaphore;
  };
}
