import type { PoolEvents } from '../../../pool/events.js';
import type { Lease, LeaseUsage } from '../../../semaphore/types.js';

/**
 * Writes a holder measures before it may resize its lease: enough for a slot time per write to mean
 * something (each a GET and a PUT while a Database learns its records are new), few enough that a batch of
 * 100 runs nearly all its writes at the resized grant.
 */
export const RESIZE_AFTER_WRITES = 8;

/** The pool events a resize watches (`ExecutorPool` fits). */
export interface CompletionEvents {
  on(event: 'pool:taskCompleted', listener: (e: PoolEvents['pool:taskCompleted']) => void): void;
  off(event: 'pool:taskCompleted', listener: (e: PoolEvents['pool:taskCompleted']) => void): void;
}

/** What a resize needs besides the lease: the work's usage so far, its events, and what to do with the new grant. */
export interface LeaseResizeWatch {
  /** The lease's usage so far (`LeaseUsage`), counted by the caller. */
  readonly usage: () => LeaseUsage;
  readonly events: CompletionEvents;
  /**
   * Told the permits and the latency the lease stands for after a resize that moved either: one that moved
   * only the latency (the lease had all it asked for) leaves the same permits standing for a lower rate.
   */
  readonly resized: (permits: number, latencyMs: number | undefined) => void;
  /** The signal that bounds the resize's request (the invocation's cutoff and a timeout). */
  readonly bound: () => AbortSignal;
}

/**
 * Resizes a lease (`Lease.resize`) once, when its work's slot time per write rises above the latency the
 * grant stands for (`lease.latencyMs`, the in-flight slack included): from then on the permits cap the pool
 * below the grant's rate. The fleet's latency is an average of past leases, or the assumed one for a prefix
 * no lease has measured yet, which a cold fleet's first writes can exceed several times over
 * (docs/decisions/first-lease-latency.md). One DynamoDB write, only for a lease that measured this far off
 * the fleet's latency (a holder in step with it never sends one).
 */
export class LeaseResize {
  #pending: Promise<void> | undefined;
  #stopped: boolean;
  readonly #onCompleted = (): void => {
    if (this.#pending !== undefined || this.#stopped) return;
    const usage = this.watch.usage();
    const writes = usage.writes ?? usage.succeeded + usage.throttled;
    // No measured time is never slower, a grant that says no latency never too quick.
    const slotMs = (usage.attemptMs ?? 0) / writes;
    if (writes < RESIZE_AFTER_WRITES || !(slotMs > (this.lease.latencyMs ?? Number.POSITIVE_INFINITY)))
      return;
    this.#pending = this.#resize(usage);
  };

  constructor(
    private readonly lease: Lease,
    private readonly watch: LeaseResizeWatch,
  ) {
    // A lease that cannot resize is not watched at all.
    this.#stopped = lease.resize === undefined;
    if (!this.#stopped) watch.events.on('pool:taskCompleted', this.#onCompleted);
  }

  /** Stops watching and waits for a resize in flight (bounded by its signal), so the release comes after it. */
  async stop(): Promise<void> {
    if (!this.#stopped) this.watch.events.off('pool:taskCompleted', this.#onCompleted);
    this.#stopped = true;
    await this.#pending;
  }

  async #resize(usage: LeaseUsage): Promise<void> {
    const before = this.lease.permits;
    const latencyBefore = this.lease.latencyMs;
    try {
      // Stryker disable next-line OptionalChaining: equivalent, only a lease that has `resize` is watched
      const permits = (await this.lease.resize?.(usage, { signal: this.watch.bound() })) ?? before;
      const latencyMs = this.lease.latencyMs;
      if ((permits !== before || latencyMs !== latencyBefore) && !this.#stopped)
        this.watch.resized(permits, latencyMs);
    } catch {
      // An optimisation: the lease keeps the permits it had, and its release gives back what the shard holds.
    }
  }
}
