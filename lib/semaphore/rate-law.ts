import type { WriteRound } from './rate-types.js';
import {
  INCREASE_SHARE,
  MAX_DECREASE,
  MIN_BUDGET_SHARE,
  PROBE_HOLD_MS,
  TOLERATED_THROTTLE_SHARE,
  TOLERATED_THROTTLES,
} from './tuning.js';

/** Whether a round saw more refusals than jitter explains (more than one, and over the tolerated share). */
export function overloaded(round: WriteRound): boolean {
  const total = round.accepted + round.throttled;
  return round.throttled > TOLERATED_THROTTLES && round.throttled > total * TOLERATED_THROTTLE_SHARE;
}

/**
 * The fleet cap's control law (docs/fleet-cap.md#the-control-law): the rate after one round of writes.
 * Overloaded: cut in proportion to the share refused (a prefix sending `x` where `a` is accepted sees
 * `1 - a/x` refused, so `x (1 - share)` is `a`), at most by half. Starved and nothing refused: add
 * `INCREASE_SHARE` of the ceiling (a round with a stray refusal is at the limit already: it holds), once
 * `PROBE_HOLD_MS` have passed since the last decrease (`sinceDecreaseMs`). Otherwise hold. Always within `[ceiling x MIN_BUDGET_SHARE, ceiling]`.
 */
export function nextRate(
  rate: number,
  round: WriteRound,
  ceiling: number,
  sinceDecreaseMs = Number.POSITIVE_INFINITY,
): number {
  let next = rate;
  if (overloaded(round)) {
    const share = round.throttled / (round.accepted + round.throttled);
    next = rate * Math.max(MAX_DECREASE, 1 - share);
  } else if (round.starved && round.throttled === 0 && sinceDecreaseMs >= PROBE_HOLD_MS) {
    next = rate + ceiling * INCREASE_SHARE;
  }
  return clampRate(next, ceiling);
}

/** `rate` within `[ceiling x MIN_BUDGET_SHARE, ceiling]`. */
export function clampRate(rate: number, ceiling: number): number {
  return Math.min(ceiling, Math.max(ceiling * MIN_BUDGET_SHARE, rate));
}
