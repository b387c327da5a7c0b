import type { WriteRound } from './rate-types.js';
import {
  INCREASE_SHARE,
  MAX_DECREASE,
  MIN_BUDGET_SHARE,
  PROBE_HOLD_MS,
  ROUND_MS,
  TOLERATED_THROTTLE_SHARE,
  TOLERATED_THROTTLES,
} from './tuning.js';

/** Whether a round saw more refusals than jitter explains (more than one, and over the tolerated share). */
export function overloaded(round: WriteRound): boolean {
  const total = round.accepted + round.throttled;
  return round.throttled > TOLERATED_THROTTLES && round.throttled > total * TOLERATED_THROTTLE_SHARE;
}

/** How long the rate has stood and the round ran, for the control law (`nextRate`). */
export interface RoundTiming {
  /** Ms since the schedule's last decrease. @default Infinity (never decreased) */
  readonly sinceDecreaseMs?: number;
  /**
   * Ms the round ran at the rate it steps from: from its booking to its step. No step is taken from a rate
   * that moved since its booking, so this is at most the time since the rate last moved.
   * @default ROUND_MS (a whole step)
   */
  readonly roundMs?: number;
  /**
   * Whether a decrease has met S3's limit since the rate was created. Until one has, the rate does not know
   * where the limit is and doubles per second (slow start, as TCP's); from then on it probes additively.
   * @default true
   */
  readonly limitFound?: boolean;
}

/**
 * The fleet cap's control law (docs/fleet-cap.md#the-control-law): the rate after one round of writes.
 * Overloaded: cut in proportion to the share refused (a prefix sending `x` where `a` is accepted sees
 * `1 - a/x` refused, so `x (1 - share)` is `a`), at most by half. Starved and nothing refused: add
 * `INCREASE_SHARE` of the ceiling per second the round ran (at most one step), once `PROBE_HOLD_MS` have
 * passed since the last decrease (before any decrease, double per second: slow start); a round with a stray
 * refusal is at the limit already: it holds.
 * Otherwise hold. Always within `[ceiling x MIN_BUDGET_SHARE, ceiling]`.
 */
export function nextRate(rate: number, round: WriteRound, ceiling: number, timing: RoundTiming = {}): number {
  const { sinceDecreaseMs = Number.POSITIVE_INFINITY, roundMs = ROUND_MS, limitFound = true } = timing;
  let next = rate;
  if (overloaded(round)) {
    const share = round.throttled / (round.accepted + round.throttled);
    next = rate * Math.max(MAX_DECREASE, 1 - share);
  } else if (round.starved && round.throttled === 0 && sinceDecreaseMs >= PROBE_HOLD_MS) {
    // A step per second the rate has stood, however many holders report: a probe shows in S3's answers
    // (its burst drained) before the next adds much to it.
    const seconds = Math.min(1, Math.max(0, roundMs) / ROUND_MS);
    next = rate + ceiling * INCREASE_SHARE * seconds;
    // Slow start: 2^seconds, so steps compound to at most a doubling per second however short the rounds.
    if (!limitFound) next = Math.max(next, rate * 2 ** seconds);
  }
  return clampRate(next, ceiling);
}

/** `rate` within `[ceiling x MIN_BUDGET_SHARE, ceiling]`. */
export function clampRate(rate: number, ceiling: number): number {
  return Math.min(ceiling, Math.max(ceiling * MIN_BUDGET_SHARE, rate));
}
