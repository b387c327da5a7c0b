// The fleet cap's rate invariant, the rate engine's form of "permits never exceed the limit"
// (docs/fleet-cap.md): the writes S3 accepted on a prefix in any short window are no more than the rates
// its budget had granted over that window, plus a small burst per grant. Both suites feed it the same
// two logs: the writes their S3 proxy let through (times of arrival) and the grants (from the budget
// item's writes as the DynamoDB proxy saw them, or from a pipeline process's event log).
import type { ProxiedCall } from '../../../lib/local/faults/fault-proxy.js';

/** One share of a prefix's budget, held from `from` to `to` (epoch ms). */
export interface RateGrant {
  readonly fence: string;
  /** Writes per second granted. */
  readonly rate: number;
  readonly from: number;
  /** Its release, its reclaim, or its lease end when neither happened. */
  readonly to: number;
}

/** How the check reads the logs. */
export interface RateCheckOptions {
  /** The sliding window, ms. @default 250 */
  readonly windowMs?: number;
  /**
   * How late the proxy may stamp a write the pool started (ms): the SDK's middleware and the loopback hop
   * run on event loops, so up to the longest loop stall in between, plus a few ms of transit. A function
   * gives it per window (by the window's start), from stalls measured over time.
   */
  readonly skewMs: number | ((t: number) => number);
  /**
   * Writes started outside any grant that are allowed anyway (epoch ms each): a tenant with few writes in
   * its batch writes without a lease (`SMALL_TENANT_WRITES`), bounded only by its writes in flight.
   * @default []
   */
  readonly unleased?: readonly number[];
}

/**
 * Writes per grant a window may hold above `rate x overlap`. A paced pool's first start under a new pace is
 * immediate (its last start may be long past), and a start late by at most half an interval is counted at
 * its slot (`StartPacer.started`), so `n` starts span at least `n - 1.5` intervals: `n <= rate x span + 1.5`,
 * rounded up to 2. Retries and timed-out attempts go through the same pacer, so they need nothing more.
 */
export const BURST_PER_GRANT = 2;

/** Default window: a quarter of a second, short enough that a lease's whole second of writes cannot hide in it. */
export const RATE_WINDOW_MS = 250;

const overlap = (a: number, b: number, from: number, to: number) =>
  Math.max(0, Math.min(b, to) - Math.max(a, from));

/**
 * Every window `[t, t + windowMs]` starting at an accepted write `t` whose writes exceed what the grants
 * allow over `[t - skewMs, t + windowMs]`; empty when the prefix kept to its budget. `writes`: arrival
 * times (epoch ms) of the writes S3 accepted on one prefix; `grants`: every grant of that prefix's budget.
 */
export function rateViolations(
  prefix: string,
  writes: readonly number[],
  grants: readonly RateGrant[],
  options: RateCheckOptions,
): string[] {
  const windowMs = options.windowMs ?? RATE_WINDOW_MS;
  const sorted = [...writes].sort((a, b) => a - b);
  const unleased = [...(options.unleased ?? [])].sort((a, b) => a - b);
  const violations: string[] = [];
  let end = 0;
  for (let i = 0; i < sorted.length; i++) {
    const t = sorted[i]!;
    while (end < sorted.length && sorted[end]! <= t + windowMs) end++;
    const count = end - i;
    const skewMs = typeof options.skewMs === 'number' ? options.skewMs : options.skewMs(t);
    const from = t - skewMs;
    const to = t + windowMs;
    let allowed = unleased.filter((u) => u >= from && u <= to).length;
    for (const g of grants) {
      const held = overlap(from, to, g.from, g.to);
      if (held > 0 || (g.from >= from && g.from <= to)) allowed += (g.rate * held) / 1000 + BURST_PER_GRANT;
    }
    if (count > allowed + 1e-9) {
      violations.push(
        `${prefix}: ${count} writes accepted in ${windowMs} ms from ${new Date(t).toISOString()}, granted ${allowed.toFixed(2)} (skew ${skewMs} ms)`,
      );
      // One report per burst: skip to the window's end.
      i = end - 1;
    }
  }
  return violations;
}

/** The most writes of any window of `windowMs` over `writes` (figures for the reports). */
export function peakWindowCount(writes: readonly number[], windowMs = RATE_WINDOW_MS): number {
  const sorted = [...writes].sort((a, b) => a - b);
  let peak = 0;
  let end = 0;
  for (let i = 0; i < sorted.length; i++) {
    while (end < sorted.length && sorted[end]! <= sorted[i]! + windowMs) end++;
    peak = Math.max(peak, end - i);
  }
  return peak;
}

const WRITE_METHODS = new Set(['PUT', 'POST', 'DELETE']);

/**
 * Arrival times of the writes S3 accepted on `prefix` of `bucket` (path-style requests through the fault
 * proxy): forwarded to the store, whatever it answered (a conditional PUT refused with 412 still counts
 * against the prefix's rate), not those the proxy refused or held itself.
 */
export function acceptedWrites(calls: readonly ProxiedCall[], bucket: string, prefix: string): number[] {
  return calls
    .filter(
      (c) =>
        WRITE_METHODS.has(c.call.method.toUpperCase()) &&
        c.call.url.startsWith(`/${bucket}/`) &&
        c.call.key.startsWith(prefix) &&
        (c.fault === undefined || c.fault === 'unknown-outcome' || c.fault === 'delay'),
    )
    .map((c) => c.at);
}
