import { describe, expect, it } from 'vitest';
import type { PipelineLogLine } from '../../lib/local/pipeline-process/event-log.js';
import { bookingsByName } from './support/budget-history.js';
import { type BookedSlots, rateViolations, writesOutsideBookings } from './support/rate-check.js';

/** 20 writes/s: one slot every 50 ms. */
const booking = (over: Partial<BookedSlots> = {}): BookedSlots => ({
  fence: 'a',
  rate: 20,
  startAt: 1_000,
  writes: 20,
  decreases: [],
  attempts: 20,
  until: 2_100,
  ...over,
});

/** `n` writes `intervalMs` apart from `from`. */
const writesAt = (from: number, n: number, intervalMs: number) =>
  Array.from({ length: n }, (_, i) => from + i * intervalMs);

const check = (writes: readonly number[], bookings: readonly BookedSlots[]) =>
  rateViolations('t=x/', writes, bookings, { skewMs: 0 });

describe('the rate check: writes accepted per window against the slots booked', () => {
  it('passes writes in their slots, and writes a little late that keep them', () => {
    expect(check(writesAt(1_000, 20, 50), [booking()])).toEqual([]);
    expect(check(writesAt(1_030, 20, 50), [booking()])).toEqual([]);
  });

  it('flags a holder that does not pace: its writes at once', () => {
    expect(check(writesAt(1_000, 20, 5), [booking()])).toHaveLength(1);
  });

  it('flags writes paced at twice the booked rate', () => {
    expect(check(writesAt(1_000, 20, 25), [booking()])[0]).toContain('writes accepted in 250 ms');
  });

  it('flags two holders writing the same slots', () => {
    const b = booking({ fence: 'b', startAt: 2_000, until: 3_100 });
    const writes = [...writesAt(1_000, 20, 50), ...writesAt(2_000, 20, 50)];
    expect(check(writes, [booking(), b])).toEqual([]);
    const overlapping = [...writesAt(1_000, 20, 50), ...writesAt(1_500, 20, 50)];
    expect(check(overlapping, [booking(), b])).not.toEqual([]);
  });

  it('allows a retry per extra attempt after the last slot, at the pace, until the report', () => {
    const writes = writesAt(1_000, 24, 50);
    expect(check(writes, [booking({ attempts: 24, until: 2_300 })])).toEqual([]);
    // Without the attempts beyond the slots, the tail is writes no slot stands for.
    expect(check(writes, [booking({ attempts: 20, until: 2_300 })])).not.toEqual([]);
  });

  it('follows a decrease: the slots ahead are stretched to the new rate', () => {
    // Halved at 1,500 ms: the ten slots left take a second instead of half of one.
    const writes = [...writesAt(1_000, 10, 50), ...writesAt(1_500, 10, 100)];
    const followed = booking({ decreases: [{ at: 1_500, rate: 10 }], until: 2_500 });
    expect(check(writes, [followed])).toEqual([]);
    expect(check(writes, [booking({ until: 2_500 })])).not.toEqual([]);
  });

  it('follows a rate raised at the first slot: the same window holds more slots, and no more than that', () => {
    // Booked at 20/s for [1,000, 2,000); raised to 40/s at its first slot: 40 slots in the same second.
    const raised = booking({ raised: { at: 1_000, rate: 40 }, attempts: 40 });
    expect(check(writesAt(1_000, 40, 25), [raised])).toEqual([]);
    expect(check(writesAt(1_000, 40, 25), [booking({ attempts: 40 })])).not.toEqual([]);
    // Faster than the raised rate is still flagged.
    expect(check(writesAt(1_000, 40, 12), [raised])).not.toEqual([]);
  });

  it('counts the small tenants writes without a booking, and only in their window', () => {
    const writes = writesAt(1_000, 8, 5);
    expect(rateViolations('t=x/', writes, [], { skewMs: 0, unbooked: writes })).toEqual([]);
    expect(rateViolations('t=x/', writes, [], { skewMs: 0, unbooked: writesAt(5_000, 8, 5) })).toHaveLength(
      1,
    );
  });

  it('finds writes before the first slot or after the report', () => {
    expect(writesOutsideBookings([990, 1_000, 2_100, 2_150, 2_200], [booking()], 60)).toEqual([990, 2_200]);
  });
});

describe('bookings from the process logs', () => {
  const base = { container: 0, name: 'p', ceiling: 20, rate: 20, fence: '0-1' } as const;
  it('joins a booking with its followed decreases and its report, by process (fences repeat after a restart)', () => {
    const lines: PipelineLogLine[] = [
      { event: 'rate-book', t: 900, pid: 1, ...base, startAt: 1_000, endsAt: 2_000, writes: 20 },
      { event: 'rate-raise', t: 1_000, pid: 1, ...base, rate: 30, at: 1_000 },
      { event: 'rate-step', t: 1_500, pid: 1, ...base, rate: 10, decreasedAt: 1_490 },
      { event: 'rate-report', t: 2_600, pid: 1, ...base, attempts: 22 },
      { event: 'rate-book', t: 3_000, pid: 2, ...base, startAt: 3_000, endsAt: 4_000, writes: 20 },
    ];
    const [first, killed] = bookingsByName(lines, (pid) => (pid === 2 ? 3_500 : 0)).get('p')!;
    expect(first).toMatchObject({
      raised: { at: 1_000, rate: 30 },
      decreases: [{ at: 1_490, rate: 10 }],
      attempts: 22,
      until: 2_600,
      reported: true,
    });
    expect(killed).toMatchObject({ decreases: [], attempts: undefined, until: 3_500, reported: false });
    expect(killed!.raised).toBeUndefined();
  });
});
