import { InvalidSemaphoreOptionsError } from './errors.js';

export interface PermitSizing {
  /** Operations per second the prefix sustains (S3: 3,500 PUT/COPY/POST/DELETE, 5,500 GET/HEAD per prefix). */
  ratePerSecond: number;
  /** Typical latency of one operation in ms. */
  latencyMs: number;
  /** Fraction of the computed concurrency to allow, in (0, 1]. Default 1. */
  safety?: number;
}

/**
 * Little's law: operations in flight = arrival rate x time in system. The permits that let a prefix run
 * at `ratePerSecond` with `latencyMs` per operation, scaled by `safety`, rounded down, at least 1.
 * `permitsFor({ ratePerSecond: 3500, latencyMs: 20 })` is 70.
 */
export function permitsFor({ ratePerSecond, latencyMs, safety = 1 }: PermitSizing): number {
  const positive = (v: number) => Number.isFinite(v) && v > 0;
  if (!positive(ratePerSecond))
    throw new InvalidSemaphoreOptionsError(`ratePerSecond must be > 0, got ${ratePerSecond}`);
  if (!positive(latencyMs)) throw new InvalidSemaphoreOptionsError(`latencyMs must be > 0, got ${latencyMs}`);
  if (!positive(safety) || safety > 1)
    throw new InvalidSemaphoreOptionsError(`safety must be in (0, 1], got ${safety}`);
  // Rounding guards against float noise such as 3500 * 0.02 = 70.00000000000001 or 69.99999999999999.
  const inFlight = Math.round(((ratePerSecond * latencyMs) / 1000) * safety * 1e6) / 1e6;
  return Math.max(1, Math.floor(inFlight));
}
