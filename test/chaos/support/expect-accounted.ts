import { expect } from 'vitest';
import { CHAOS_FAULTS, type ChaosReport } from './chaos-run.js';
import type { RateAccount } from './rate-accounting.js';

/** The assertions both cuts of the suite make on their accounting report. */
export function expectAccounted(r: ChaosReport, run: { messages: number; kills: number }): void {
  // Every message is accounted for: its record's final state, or the DLQ with a reason.
  expect(r.problems).toEqual([]);
  expect(r.lost).toBe(0);
  expect(r.duplicated).toBe(0);
  expect(r.sent).toBe(run.messages);
  const badMessages = Math.round(run.messages * 0.02);
  expect(r.deadLettered).toBe(badMessages);
  expect(Object.keys(r.deadLetteredByReason).sort()).not.toContain('max-receive-count');
  expect(r.written + r.deletedAsExpected).toBeGreaterThan(0);

  // The faults really happened, in about the asked shares.
  expect(r.kills).toHaveLength(run.kills);
  for (const k of r.kills) expect(r.rate === undefined ? k.permitsHeld : k.rateHeld).toBeGreaterThan(0);
  expect(r.processes).toBe(run.kills + 1);
  expect(r.redelivered).toBeGreaterThan(0);
  const share = (n: number) => n / r.chaos.requests;
  expect(share(r.chaos.slowDowns)).toBeGreaterThan(CHAOS_FAULTS.slowDownRate * 0.6);
  expect(share(r.chaos.slowDowns)).toBeLessThan(CHAOS_FAULTS.slowDownRate * 1.5);
  expect(r.pool.throttles).toBeGreaterThan(0);
  expect(r.pool.retries).toBeGreaterThan(0);

  if (r.rate === undefined) expectPermitsKept(r);
  else expectRatesKept(r.rate);

  // No in-flight count above its cap: per container the invocation budget, and never beyond the prefix's
  // bound (the permits held; with the rate engine the holder's pool; unleased, the tenant's writes).
  expect(r.inFlight.peak).toBeGreaterThan(0);
  expect(r.inFlight.peak).toBeLessThanOrEqual(r.inFlight.cap);
  expect(r.inFlight.peakOverPermits).toBeLessThanOrEqual(0);
}

/** Semaphore: never more holders than the limit; killed processes' permits come back after their leases. */
function expectPermitsKept(r: ChaosReport): void {
  for (const [name, p] of Object.entries(r.semaphore.peaks)) {
    expect(p.peak, name).toBeLessThanOrEqual(p.limit);
  }
  expect(r.semaphore.orphanedPermits).toBeGreaterThan(0);
  expect(r.semaphore.leakedByGracefulProcesses).toBe(0);
  expect(r.semaphore.fullLimitAcquired).toBe(true);
  expect(r.semaphore.fullLimitLateMs).toBeLessThanOrEqual(1_000);
}

/**
 * Rate schedule: the writes S3 accepted per prefix never above the slots booked, plus the retries
 * (test/chaos/support/rate-check.ts), and no large tenant's write outside a booking; the kills came while
 * bookings were open, and nothing stays booked after the run.
 */
function expectRatesKept(rate: RateAccount): void {
  expect(rate.bookings).toBeGreaterThan(0);
  expect(rate.violations).toEqual([]);
  expect(rate.largeUnleasedWrites).toBe(0);
  expect(rate.orphaned).toBeGreaterThan(0);
  expect(rate.nextSlotBooked).toBe(true);
  expect(rate.nextSlotLateMs).toBeLessThanOrEqual(1_000);
}
