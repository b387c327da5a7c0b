/** One holder's belief that it held `permits` from `start` (after acquire returned) to `end` (before release was sent). */
export interface HoldInterval {
  start: number;
  end: number;
  permits: number;
}

/**
 * Sweeps the intervals and returns the most permits believed held at any instant. At equal timestamps
 * ends count before starts: an acquire can only have succeeded after the release it depends on landed,
 * which is after that release's (earlier-or-equal) logged time.
 */
export function peakHeld(intervals: readonly HoldInterval[]): { peak: number; at: number } {
  const events = intervals.flatMap((i) => [
    { t: i.start, delta: i.permits },
    { t: i.end, delta: -i.permits },
  ]);
  events.sort((a, b) => a.t - b.t || a.delta - b.delta);
  let held = 0;
  let peak = 0;
  let at = Number.NaN;
  for (const e of events) {
    held += e.delta;
    if (held > peak) {
      peak = held;
      at = e.t;
    }
  }
  return { peak, at };
}
