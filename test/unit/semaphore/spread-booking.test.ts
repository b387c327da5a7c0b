// spreadBooking (a holder's writes over several stripes at once): the window the pieces share, paced at
// the sum of their rates, never holds more writes than their slots there; steps and reports reach every
// piece with the whole round.
import { describe, expect, it } from 'vitest';
import type { BookingReport, RateBooking, WriteRound } from '../../../lib/semaphore/rate-types.js';
import { spreadBooking, spreadWindow } from '../../../lib/semaphore/spread-booking.js';

const NOW = 1_700_000_000_000;
const lost = Object.assign(new Error('report lost'), { name: 'TimeoutError' });

/** A booking of `writes` slots at `rate` from `startAt`, recording what it is handed. */
function piece(startAt: number, rate: number, writes: number, failReports = 0) {
  const rounds: WriteRound[] = [];
  const reports: BookingReport[] = [];
  let failures = failReports;
  const booking: RateBooking = {
    rate,
    startAt,
    endsAt: startAt + (writes * 1000) / rate,
    writes,
    bookedAt: startAt,
    queued: false,
    step: async (round) => {
      rounds.push(round);
      return { rate: rate / 2, decreasedAt: startAt };
    },
    report: async (report) => {
      reports.push(report);
      if (failures-- > 0) throw lost;
    },
  };
  return { booking, rounds, reports };
}

describe('spreadWindow', () => {
  it("is the pieces' shared window at the sum of their rates: from the latest start to the earliest end", () => {
    const a = piece(NOW, 100, 100).booking; // NOW .. NOW + 1,000
    const b = piece(NOW + 100, 50, 40).booking; // NOW + 100 .. NOW + 900
    expect(spreadWindow([a, b])).toEqual({ rate: 150, startAt: NOW + 100, endsAt: NOW + 900, writes: 120 });
  });

  it('never holds more writes than the pieces booked, nor more than their slots in the window', () => {
    for (let trial = 0; trial < 500; trial++) {
      const pieces = Array.from(
        { length: 1 + (trial % 4) },
        (_, i) =>
          piece(
            NOW + ((trial * 37 + i * 53) % 200),
            10 + ((trial * 13 + i * 29) % 90),
            1 + ((trial + i * 7) % 60),
          ).booking,
      );
      const w = spreadWindow(pieces);
      expect(w.writes).toBeLessThanOrEqual(pieces.reduce((sum, p) => sum + p.writes, 0));
      // The slots each piece has in [startAt, endsAt), at its own rate.
      const inWindow = pieces.reduce((sum, p) => {
        if (w.endsAt <= w.startAt) return sum;
        const first = Math.max(0, Math.ceil(((w.startAt - p.startAt) * p.rate) / 1000 - 1e-9));
        const last = Math.min(p.writes, Math.ceil(((w.endsAt - p.startAt) * p.rate) / 1000 - 1e-9));
        return sum + Math.max(0, last - first);
      }, 0);
      // Whole slots: each piece may cut one short at either edge.
      expect(w.writes).toBeLessThanOrEqual(inWindow + pieces.length);
      expect(w.endsAt).toBeGreaterThanOrEqual(w.startAt);
    }
  });

  it('pieces that share no window hold nothing', () => {
    const a = piece(NOW, 100, 10).booking; // ends at NOW + 100
    const b = piece(NOW + 500, 100, 10).booking;
    expect(spreadWindow([a, b]).writes).toBe(0);
  });
});

describe('spreadBooking', () => {
  it('steps every piece with the whole round and resolves their rates summed', async () => {
    const a = piece(NOW, 100, 100);
    const b = piece(NOW, 60, 60);
    const round = { accepted: 30, throttled: 10, starved: false };
    const view = await spreadBooking([a.booking, b.booking]).step(round);
    expect(a.rounds).toEqual([round]);
    expect(b.rounds).toEqual([round]);
    expect(view).toEqual({ rate: 80, decreasedAt: NOW });
  });

  it('reports every piece with the whole report; one that failed fails the report after the others finished', async () => {
    const a = piece(NOW, 100, 100);
    const b = piece(NOW, 100, 100, 1);
    const spread = spreadBooking([a.booking, b.booking]);
    const report = { accepted: 200, throttled: 0, starved: true };
    await expect(spread.report(report)).rejects.toBe(lost);
    expect(a.reports).toEqual([report]);
    expect(b.reports).toEqual([report]);
  });

  it('is queued when any piece is, booked when the first was', () => {
    const a = piece(NOW, 100, 100).booking;
    const b = { ...piece(NOW + 5, 100, 100).booking, queued: true };
    expect(spreadBooking([a, b])).toMatchObject({ queued: true, bookedAt: NOW, startAt: NOW + 5 });
  });
});
