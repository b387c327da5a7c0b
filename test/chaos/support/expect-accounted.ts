import { expect } from 'vitest';
import { CHAOS_FAULTS, type ChaosReport } from './chaos-run.js';

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

  // The faults really happened, in about the asked shares; each kill came while bookings were open.
  expect(r.kills).toHaveLength(run.kills);
  for (const k of r.kills) expect(k.rateBooked).toBeGreaterThan(0);
  expect(r.processes).toBe(run.kills + 1);
  expect(r.redelivered).toBeGreaterThan(0);
  const share = (n: number) => n / r.chaos.requests;
  expect(share(r.chaos.slowDowns)).toBeGreaterThan(CHAOS_FAULTS.slowDownRate * 0.6);
  expect(share(r.chaos.slowDowns)).toBeLessThan(CHAOS_FAULTS.slowDownRate * 1.5);
  expect(r.pool.throttles).toBeGreaterThan(0);
  expect(r.pool.retries).toBeGreaterThan(0);

  // The rate schedule: the writes S3 accepted per prefix never above the slots booked, plus the retries
  // (test/chaos/support/rate-check.ts), and no large tenant's write outside a booking; the killed holders
  // left nothing booked past their own slots.
  expect(r.rate.bookings).toBeGreaterThan(0);
  expect(r.rate.violations).toEqual([]);
  expect(r.rate.largeUnbookedWrites).toBe(0);
  expect(r.rate.orphaned).toBeGreaterThan(0);
  expect(r.rate.nextSlotBooked).toBe(true);
  expect(r.rate.nextSlotLateMs).toBeLessThanOrEqual(1_000);

  // No in-flight count above its cap: per container the invocation budget, and never beyond the prefix's
  // bound (booked: the holder's pool; unbooked: fewer than SMALL_TENANTS.writes).
  expect(r.inFlight.peak).toBeGreaterThan(0);
  expect(r.inFlight.peak).toBeLessThanOrEqual(r.inFlight.cap);
  expect(r.inFlight.peakOverBound).toBeLessThanOrEqual(0);
}
