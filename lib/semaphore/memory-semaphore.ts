import { randomUUID } from 'node:crypto';
import { throwIfAborted } from './backoff.js';
import { LeaseLostError, SemaphoreTimeoutError } from './errors.js';
import type { AcquireOptions, Lease, Semaphore } from './types.js';
import { checkLeaseMs, checkPermitRequest, checkSemaphoreOptions } from './validation.js';

export interface MemorySemaphoreOptions {
  /** Total permits. */
  limit: number;
  /** Shown in errors. Default `'memory'`. */
  name?: string;
  /** Default lease length in ms, relative to each acquire. Default 60,000 (as `DynamoSemaphore`). */
  leaseMs?: number;
  /** Clock in epoch ms. Default `Date.now` (looked up per call, so fake timers apply). */
  now?: () => number;
}

interface Holder {
  n: number;
  until: number;
}

interface Waiter {
  k: number;
  min: number;
  leaseMs: number;
  grant(permits: number, leaseMs: number): void;
}

/**
 * The `Semaphore` contract inside one process: for tests and single-process runs. Same lease, expiry,
 * fencing and error semantics as `DynamoSemaphore`, but waiters are woken on release (FIFO: a waiter that
 * cannot get its `min` yet blocks those behind it, so large requests are not starved) instead of polling.
 */
export class MemorySemaphore implements Semaphore {
  readonly name: string;
  readonly limit: number;
  readonly leaseMs: number;
  private readonly now: () => number;
  private readonly holders = new Map<string, Holder>();
  private readonly waiters: Waiter[] = [];
  private used = 0;
  private expiryTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(options: MemorySemaphoreOptions) {
    this.name = options.name ?? 'memory';
    this.limit = options.limit;
    this.leaseMs = options.leaseMs ?? 60_000;
    this.now = options.now ?? (() => Date.now());
    checkSemaphoreOptions(this);
  }

  /** Permits not held by a live lease right now (expired leases count as free). */
  get available(): number {
    this.reclaimExpired();
    return this.limit - this.used;
  }

  async acquire(k: number, options: AcquireOptions = {}): Promise<Lease> {
    const min = checkPermitRequest(this.name, this.limit, k, options);
    const leaseMs = options.leaseMs ?? this.leaseMs;
    const { deadline, signal } = options;
    throwIfAborted(signal);
    this.reclaimExpired();
    const free = this.limit - this.used;
    if (this.waiters.length === 0 && free >= min) return this.grant(Math.min(k, free), leaseMs);
    if (deadline !== undefined && deadline <= this.now())
      throw new SemaphoreTimeoutError(this.name, min, deadline);
    return this.wait(k, min, leaseMs, deadline, signal);
  }

  private wait(
    k: number,
    min: number,
    leaseMs: number,
    deadline: number | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Lease> {
    return new Promise<Lease>((resolve, reject) => {
      let deadlineTimer: ReturnType<typeof setTimeout> | undefined;
      const leave = () => {
        const index = this.waiters.indexOf(waiter);
        if (index >= 0) this.waiters.splice(index, 1);
        if (deadlineTimer !== undefined) clearTimeout(deadlineTimer);
        signal?.removeEventListener('abort', onAbort);
      };
      const giveUp = (reason: unknown) => {
        leave();
        reject(reason);
        // The waiter that gave up may have been the head blocking smaller requests behind it.
        this.pump();
      };
      const onAbort = () => giveUp(signal?.reason);
      const waiter: Waiter = {
        k,
        min,
        leaseMs,
        grant: (permits, ms) => {
          leave();
          resolve(this.grant(permits, ms));
        },
      };
      this.waiters.push(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
      if (deadline !== undefined) {
        deadlineTimer = setTimeout(
          () => giveUp(new SemaphoreTimeoutError(this.name, min, deadline)),
          Math.max(0, deadline - this.now()),
        );
      }
      this.scheduleExpiryWake();
    });
  }

  private grant(permits: number, leaseMs: number): Lease {
    const fence = randomUUID();
    const holder: Holder = { n: permits, until: this.now() + leaseMs };
    this.holders.set(fence, holder);
    this.used += permits;
    let released = false;
    const semaphore = this;
    return {
      permits,
      fence,
      get expiresAt() {
        return holder.until;
      },
      async release() {
        if (released) return;
        released = true;
        // Fencing: a lease that was reclaimed is no longer in the map, so it frees nothing.
        if (semaphore.holders.get(fence) !== holder) return;
        semaphore.holders.delete(fence);
        semaphore.used -= holder.n;
        semaphore.pump();
      },
      async extend(ms: number) {
        checkLeaseMs(semaphore.name, ms);
        semaphore.reclaimExpired();
        if (released || semaphore.holders.get(fence) !== holder)
          throw new LeaseLostError(semaphore.name, fence);
        holder.until = semaphore.now() + ms;
      },
    };
  }

  /** Grants to waiters in arrival order while the head's `min` fits. */
  private pump(): void {
    this.reclaimExpired();
    for (let head = this.waiters[0]; head !== undefined; head = this.waiters[0]) {
      const free = this.limit - this.used;
      if (free < head.min) break;
      head.grant(Math.min(head.k, free), head.leaseMs);
    }
    this.scheduleExpiryWake();
  }

  private reclaimExpired(): void {
    const now = this.now();
    for (const [fence, holder] of this.holders) {
      if (holder.until < now) {
        this.holders.delete(fence);
        this.used -= holder.n;
      }
    }
  }

  /** While someone waits, wake up when the earliest lease expires: its permits become reclaimable then. */
  private scheduleExpiryWake(): void {
    if (this.expiryTimer !== undefined) clearTimeout(this.expiryTimer);
    this.expiryTimer = undefined;
    if (this.waiters.length === 0 || this.holders.size === 0) return;
    let earliest = Number.POSITIVE_INFINITY;
    for (const holder of this.holders.values()) earliest = Math.min(earliest, holder.until);
    this.expiryTimer = setTimeout(() => this.pump(), Math.max(0, earliest - this.now() + 1));
  }
}
