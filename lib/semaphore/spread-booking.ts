import type { BookingReport, RateBooking, ScheduleView, StepOptions, WriteRound } from './rate-types.js';

/**
 * Bookings of several budgets written as one (a sharded tenant's stripes, docs/decisions/striped-shard-budgets.md):
 * the holder paces at the sum of their rates over the window they share, from the latest first slot to the
 * earliest end, and holds the slots that window has. Every piece's writes spread over the same shards, so
 * the writes of one round say as much about each stripe as about all of them: a step and a report hand each
 * piece the whole round, and the view a step resolves is the sum of the pieces' rates.
 */
export function spreadBooking(pieces: readonly RateBooking[]): RateBooking {
  return {
    ...spreadWindow(pieces),
    bookedAt: Math.min(...pieces.map((p) => p.bookedAt)),
    queued: pieces.some((p) => p.queued),
    async step(round: WriteRound, options?: StepOptions): Promise<ScheduleView> {
      const views = await Promise.all(pieces.map((p) => p.step(round, options)));
      return {
        rate: views.reduce((sum, v) => sum + v.rate, 0),
        decreasedAt: Math.max(...views.map((v) => v.decreasedAt)),
      };
    },
    async report(report: BookingReport, options?: { readonly signal?: AbortSignal }): Promise<void> {
      // Each piece reports once (a piece's report keeps its first call's promise), so a report tried again
      // after one piece failed reaches only the pieces that did not finish.
      const results = await Promise.allSettled(pieces.map((p) => p.report(report, options)));
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed !== undefined) throw failed.reason;
    },
  };
}

/**
 * The window the pieces share and what it holds at the sum of their rates: paced uniformly at that sum
 * from its start, the holder starts no more writes in any stretch of it than the pieces' slots there.
 */
export function spreadWindow(
  pieces: readonly RateBooking[],
): Pick<RateBooking, 'rate' | 'startAt' | 'endsAt' | 'writes'> {
  const rate = pieces.reduce((sum, p) => sum + p.rate, 0);
  const startAt = Math.max(...pieces.map((p) => p.startAt));
  const endsAt = Math.max(startAt, Math.min(...pieces.map((p) => p.endsAt)));
  const booked = pieces.reduce((sum, p) => sum + p.writes, 0);
  const writes = Math.min(booked, Math.floor(((endsAt - startAt) * rate) / 1000));
  return { rate, startAt, endsAt: startAt + (writes * 1000) / rate, writes };
}
