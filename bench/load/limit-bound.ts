// The figures of the limit-bound scenario, from one run's samples: the hot prefix's accepted writes/s
// before and after the proxy's limit halves, its 503 share, and how long it took to settle at the new limit.
import type { LoadRunResult, LoadSample } from './engine.js';

export interface HotPrefixFigures {
  /** Accepted writes/s of the hot prefix while the limit was whole / halved (the limit's trailing edge excluded). */
  acceptedBefore: number;
  acceptedAfter: number | undefined;
  /** 503 answers as a share of the hot prefix's requests, whole run. */
  throttledShare: number;
  /** Seconds from the halving until the hot prefix settled at the new limit (undefined: never). */
  reconvergedAfterS: number | undefined;
}

/** A window of the run: [from, to] in seconds. */
function rateBetween(
  samples: readonly LoadSample[],
  from: number,
  to: number,
  pick: (s: LoadSample) => number,
) {
  const a = samples.find((s) => s.t >= from);
  const b = [...samples].reverse().find((s) => s.t <= to);
  if (a === undefined || b === undefined || b.t <= a.t) return 0;
  return (pick(b) - pick(a)) / (b.t - a.t);
}

/**
 * Settled at the new limit: from this instant on, for `holdS` seconds, every 1 s window of the hot prefix
 * has at most `maxThrottled` of its requests answered 503 and accepts at least `minShare` of the new limit
 * (or of the hot traffic offered, when the run is running out of hot messages).
 */
export function reconvergence(
  samples: readonly LoadSample[],
  halvedAt: number,
  newLimit: number,
  { holdS = 3, maxThrottled = 0.05, minShare = 0.8 } = {},
): number | undefined {
  const end = lastHotActivity(samples);
  for (const start of samples.filter((s) => s.t >= halvedAt && s.t + holdS <= end)) {
    let settled = true;
    for (let w = start.t; w + 1 <= start.t + holdS; w += 0.25) {
      const requests = rateBetween(samples, w, w + 1, (s) => s.hot.requests);
      const throttled = rateBetween(samples, w, w + 1, (s) => s.hot.throttled);
      const ok = rateBetween(samples, w, w + 1, (s) => s.hot.ok);
      if (requests > 0 && throttled / requests > maxThrottled) settled = false;
      if (ok < minShare * newLimit) settled = false;
      if (!settled) break;
    }
    if (settled) return Math.round((start.t - halvedAt) * 100) / 100;
  }
  return undefined;
}

/** The last sample instant at which the hot prefix still saw new requests. */
function lastHotActivity(samples: readonly LoadSample[]): number {
  let last = 0;
  for (let i = 1; i < samples.length; i++) {
    if (samples[i]!.hot.requests > samples[i - 1]!.hot.requests) last = samples[i]!.t;
  }
  return last;
}

function firstHotActivity(samples: readonly LoadSample[]): number {
  return samples.find((s) => s.hot.requests > 0)?.t ?? 0;
}

export function hotPrefixFigures(run: LoadRunResult): HotPrefixFigures {
  const { samples } = run;
  const first = firstHotActivity(samples);
  const last = lastHotActivity(samples);
  const final = samples.at(-1)!;
  const halvedAt = run.halvedAt;
  // Skip the first second (cold starts) and stop at the halving or at the last hot request.
  const acceptedBefore = rateBetween(samples, first + 1, halvedAt ?? last, (s) => s.hot.ok);
  const acceptedAfter =
    halvedAt === undefined ? undefined : rateBetween(samples, halvedAt, last, (s) => s.hot.ok);
  const newLimit = samples.find((s) => halvedAt !== undefined && s.t >= halvedAt)?.limit ?? final.limit;
  return {
    acceptedBefore,
    acceptedAfter,
    throttledShare: final.hot.requests === 0 ? 0 : final.hot.throttled / final.hot.requests,
    reconvergedAfterS: halvedAt === undefined ? undefined : reconvergence(samples, halvedAt, newLimit),
  };
}
