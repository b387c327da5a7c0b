/**
 * Every knob of the fleet cap, one line each; the model they belong to is docs/fleet-cap.md, and each
 * value's reason is in the decision record it links.
 */

/**
 * The law's round, ms: the rate moves at most one step per this long, and while a rate climbs a booking
 * spans at most this long of slots (one slot at least), so each booking's report is at most one round and a
 * climbing rate is tried within a round of being set, whatever the rate (docs/fleet-cap.md#the-control-law).
 */
export const ROUND_MS = 1_000;

/** Below this share of writes refused with SlowDown, a rate holds: jitter alone causes that at the limit (docs/decisions/throttle-response.md). */
export const TOLERATED_THROTTLE_SHARE = 0.01;

/** Refusals a round may see and still count as noise, whatever its share (one stray 503 never cuts a rate). */
export const TOLERATED_THROTTLES = 1;

/**
 * An increase adds this share of the ceiling per second its round ran at the rate, so the rate climbs at
 * most this share per second: from half the ceiling back to it in 16 s (docs/decisions/throttle-response.md).
 */
export const INCREASE_SHARE = 1 / 32;

/**
 * After a decrease the budget holds this long before it probes upward again: the decrease found the limit
 * just below, and each probe above it costs about a lease of refused writes, so probing once per this
 * long keeps a prefix held at its limit near 1 % refused (docs/fleet-cap.md#the-control-law).
 */
export const PROBE_HOLD_MS = 10_000;

/** A budget never falls below this share of its ceiling, so a prefix always makes progress. */
export const MIN_BUDGET_SHARE = 1 / 64;

/** One decrease cuts a rate to at least this share of itself, however many writes were refused. */
export const MAX_DECREASE = 1 / 2;

/** Wait before a booking that lost a race to another reads the schedule again, ms: full jitter, from 20 doubling to 200. */
export const BOOKING_RACE_BACKOFF = { firstDelayMs: 20, maxDelayMs: 200 } as const;

/**
 * How late a holder's write may start and keep its slot, ms (`ExecutorPool.setStartInterval`'s catch-up):
 * the writes behind it then catch up, so a short event-loop stall costs no rate. A prefix written at its
 * limit has no burst to spare, so this stays short (docs/decisions/slot-schedule.md).
 */
export const SLOT_CATCH_UP_MS = 20;

/**
 * Writes a holder's round needs, counted from its first refusal, before its share refused may step the
 * schedule within a booking: fewer is noise (two refusals in a row read as a halving), more lets a halved
 * limit refuse that many writes per holder before anyone slows down (docs/decisions/slot-schedule.md).
 * Per prefix: a holder whose writes spread over K shard prefixes needs K times as many.
 */
export const MIN_ROUND_WRITES = 10;
