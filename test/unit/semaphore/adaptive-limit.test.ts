// The adaptive limit's control law, on a virtual clock: AIMD on what S3 answered, bounded by Little's law
// with the measured latency. Deterministic: every input, the clock included, is in the arguments.
import { describe, expect, it } from 'vitest';
import {
  type AdaptiveState,
  adaptLimit,
  CAUTIOUS_FOR_MS,
  CAUTIOUS_INCREASE_SHARE,
  ceilingPerShard,
  initialState,
  type LeaseOutcome,
  MIN_CAPACITY,
  overloaded,
  resolveAdaptiveLimitOptions,
} from '../../../lib/semaphore/adaptive-limit.js';
import { InvalidSemaphoreOptionsError } from '../../../lib/semaphore/errors.js';

const law = resolveAdaptiveLimitOptions({ ratePerSecond: 100, initialLatencyMs: 20, latencyWeight: 0.5 });

/** A lease of `permits` held from `t` for `heldMs`, `succeeded` + `throttled` attempts under it. */
const lease = (over: Partial<LeaseOutcome> & { t: number }): LeaseOutcome => ({
  takenAt: over.t,
  releasedAt: over.t + (over.releasedAt ?? 100),
  permits: over.permits ?? 2,
  wanted: over.wanted ?? 10,
  succeeded: over.succeeded ?? 10,
  throttled: over.throttled ?? 0,
  ...(over.attemptMs === undefined ? {} : { attemptMs: over.attemptMs }),
  ...(over.writes === undefined ? {} : { writes: over.writes }),
  ...(over.keptShare === undefined ? {} : { keptShare: over.keptShare }),
});
/** Attempt-milliseconds that keep the latency where `state` has it (the permits then hold still). */
const steady = (state: AdaptiveState, attempts: number) => state.latencyMs * attempts;

describe('adaptive limit: control law', () => {
  it("starts at Little's law with the assumed latency, split over the shards", () => {
    expect(initialState(1, law)).toEqual({ capacity: 2, latencyMs: 20, decreasedAt: 0 });
    const big = resolveAdaptiveLimitOptions({ ratePerSecond: 3500 });
    expect(initialState(2, big).capacity).toBe(35);
    // Under one permit: a share of one slot's time (50/s x 15 ms = 0.75), on the 1/1024 grid.
    const small = resolveAdaptiveLimitOptions({ ratePerSecond: 50, initialLatencyMs: 15 });
    expect(initialState(1, small).capacity).toBe(0.75);
    // Not rounded down to whole permits: 50/s x 50 ms is 2.5 permits, not 2 (which stand for 40/s).
    const mid = resolveAdaptiveLimitOptions({ ratePerSecond: 50, initialLatencyMs: 50 });
    expect(initialState(1, mid).capacity).toBe(2.5);
    // Never below MIN_CAPACITY, whatever the rate: a prefix always progresses.
    expect(initialState(4, resolveAdaptiveLimitOptions({ ratePerSecond: 1 })).capacity).toBe(MIN_CAPACITY);
  });

  it("measures permit-milliseconds per attempt and sizes the ceiling by it (Little's law)", () => {
    // 2 permits held 100 ms for 4 attempts: 50 permit-ms each; average with 20 at weight 0.5 -> 35.
    const step = adaptLimit(initialState(1, law), lease({ t: 1_000, permits: 2, succeeded: 4 }), 1, law);
    expect(step.latencyMs).toBeCloseTo(35, 9);
    // 100/s x 35 ms = 3.5 permits: the ceiling, and where the permits go (they carry the same rate at the
    // longer latency: 2 x 35 / 20), the increase capped there.
    expect(ceilingPerShard(step.latencyMs, 1, law)).toBeCloseTo(3.5, 9);
    expect(step.capacity).toBe(3.5);
  });

  it('sizes by slot-milliseconds per write when the holder counted its writes (reads share the slots, not the rate)', () => {
    // 100 attempts of 20 ms, half of them reads (the GET of a conditional write): each write took 40 ms of a
    // slot. Little's law for 100 writes/s needs 4 permits, not the 2 that 20 ms per attempt gives (which
    // would carry 100 attempts/s = 50 writes/s: half the prefix's write rate).
    const state: AdaptiveState = { capacity: 2, latencyMs: 40, decreasedAt: 0 };
    const mixed = lease({ t: 1, permits: 2, wanted: 10, succeeded: 100, attemptMs: 2_000, writes: 50 });
    const step = adaptLimit(state, mixed, 1, law);
    expect(step.latencyMs).toBeCloseTo(40, 9);
    expect(ceilingPerShard(step.latencyMs, 1, law)).toBeCloseTo(4, 9);
    // Without the count the same lease reads as 20 ms per attempt: the permits halve with the latency.
    const { writes: _, ...uncounted } = mixed;
    expect(adaptLimit(state, uncounted, 1, law).latencyMs).toBeCloseTo(30, 9);
    // A lease that wrote nothing (reads only) says nothing about the write latency: it holds still.
    expect(adaptLimit(state, { ...mixed, writes: 0 }, 1, law).latencyMs).toBe(40);
  });

  it('takes the share refused among the writes (reads are never refused at the write limit)', () => {
    const state: AdaptiveState = { capacity: 2, latencyMs: 100, decreasedAt: 0 };
    // 40 of 80 writes refused, 120 reads beside them: half the writes, a fifth of the attempts.
    const step = adaptLimit(
      state,
      lease({ t: 1, succeeded: 160, throttled: 40, attemptMs: 8_000, writes: 80 }),
      1,
      law,
    );
    expect(step.decreased).toBe(true);
    expect(step.capacity).toBeCloseTo(1, 2);
    // One refused write in 150 is noise whatever the reads: no decrease.
    expect(overloaded({ succeeded: 399, throttled: 1, writes: 150 })).toBe(false);
    // Two in 150 writes are more than 1% of the writes, though under 1% of the 400 attempts.
    expect(overloaded({ succeeded: 398, throttled: 2, writes: 150 })).toBe(true);
    expect(overloaded({ succeeded: 398, throttled: 2 })).toBe(false);
  });

  it("with in-flight slack, grants slack x Little's law in permits for the same rate", () => {
    const slack = resolveAdaptiveLimitOptions({
      ratePerSecond: 100,
      initialLatencyMs: 20,
      inFlightSlack: 1.5,
    });
    // 100/s x 20 ms = 2 in flight on average; 3 permits, so a slow answer does not hold the rate down.
    expect(initialState(1, slack).capacity).toBe(3);
    expect(ceilingPerShard(20, 1, slack)).toBeCloseTo(3, 9);
    // A holder that does not measure its attempts: permit-ms per attempt include the slack, which must
    // not be read as latency (3 permits held 1 s for 100 attempts is 20 ms each, not 30).
    const state = initialState(1, slack);
    const step = adaptLimit(
      state,
      lease({ t: 1, permits: 3, succeeded: 100, releasedAt: 1_000, wanted: 3 }),
      1,
      slack,
    );
    expect(step.latencyMs).toBeCloseTo(20, 9);
    expect(() => resolveAdaptiveLimitOptions({ ratePerSecond: 1, inFlightSlack: 0.5 })).toThrow(
      InvalidSemaphoreOptionsError,
    );
    expect(() => resolveAdaptiveLimitOptions({ ratePerSecond: 1, inFlightSlack: Number.NaN })).toThrow(
      'adaptive.inFlightSlack must be >= 1, got NaN',
    );
  });

  it('moves the permits with the latency, so the rate they stand for stays (a limit is a rate)', () => {
    // Below the ceiling after a decrease: 1 permit at 20 ms is 50/s of the 100/s configured.
    const state: AdaptiveState = { capacity: 1, latencyMs: 20, decreasedAt: 0 };
    // A satisfied lease (wanted what it got) at 30 ms per attempt: average 25 ms, 1.25 permits, still 50/s.
    const slower = adaptLimit(
      state,
      lease({ t: 1, permits: 1, wanted: 1, succeeded: 10, releasedAt: 300 }),
      1,
      law,
    );
    expect(slower.latencyMs).toBeCloseTo(25, 9);
    expect(slower.capacity).toBe(1.25);
    // At 10 ms: average 15 ms, 0.75 permits.
    const faster = adaptLimit(
      state,
      lease({ t: 1, permits: 1, wanted: 1, succeeded: 10, releasedAt: 100 }),
      1,
      law,
    );
    expect(faster.capacity).toBe(0.75);
    // A stalled lease (5 s per attempt) moves them by x2 at most, and the ceiling (100/s x 2.5 s) is no bound.
    const stalled = adaptLimit(
      state,
      lease({ t: 1, permits: 1, wanted: 1, succeeded: 1, releasedAt: 5_000 }),
      1,
      law,
    );
    expect(stalled.capacity).toBe(2);
    // The other way: x0.5 at most.
    const quick = adaptLimit(
      { capacity: 1, latencyMs: 200, decreasedAt: 0 },
      lease({ t: 1, permits: 1, wanted: 1, succeeded: 100, releasedAt: 1 }),
      1,
      law,
    );
    expect(quick.capacity).toBe(0.5);
  });

  it('grows additively only while holders want more than they got and nothing was throttled', () => {
    const state: AdaptiveState = { capacity: 2, latencyMs: 100, decreasedAt: 0 };
    const starved = adaptLimit(state, lease({ t: 1, permits: 2, wanted: 10, succeeded: 2 }), 1, law);
    // + min(increaseStep, capacity / 8): a quarter of a permit at 2.
    expect(starved.capacity).toBe(2.25);
    const satisfied = adaptLimit(state, lease({ t: 1, permits: 2, wanted: 2, succeeded: 2 }), 1, law);
    expect(satisfied.capacity).toBe(2);
    // A lease that did nothing (no attempts) neither grows the limit nor moves the latency.
    const idle = adaptLimit(state, lease({ t: 1, permits: 2, wanted: 10, succeeded: 0 }), 1, law);
    expect(idle).toMatchObject({ capacity: 2, latencyMs: 100, decreased: false });
  });

  it('never grows past rate x measured latency, whatever the demand', () => {
    let state: AdaptiveState = { capacity: 1, latencyMs: 40, decreasedAt: 0 };
    for (let t = 0; t < 50; t++) {
      // Every lease: 1 attempt per 40 permit-ms, i.e. the latency stays 40 ms.
      state = adaptLimit(state, lease({ t: t * 100, permits: 4, releasedAt: 100, succeeded: 10 }), 1, law);
    }
    expect(state.latencyMs).toBeCloseTo(40, 6);
    expect(state.capacity).toBeCloseTo(4, 6); // 100/s x 40 ms
  });

  it('shrinks multiplicatively on SlowDown, once per round of leases taken before the decrease', () => {
    // Every lease here measures 200 permit-ms per attempt (20 permits x 100 ms / 10 attempts), so the
    // ceiling (100/s x 200 ms = 20) stays out of the way.
    const state: AdaptiveState = { capacity: 10, latencyMs: 200, decreasedAt: 0 };
    const throttledLease = (t: number, throttled: number) =>
      lease({ t, permits: 20, succeeded: 10 - throttled, throttled });
    const first = adaptLimit(state, throttledLease(1_000, 3), 1, law);
    expect(first).toMatchObject({ capacity: 7, decreased: true, decreasedAt: 1_100 });
    // A lease taken before that decrease saw the same overload: no second cut.
    const sameRound = adaptLimit(first, throttledLease(1_050, 5), 1, law);
    expect(sameRound).toMatchObject({ capacity: 7, decreased: false, decreasedAt: 1_100 });
    // A lease taken after it that is still throttled cuts again.
    const nextRound = adaptLimit(first, throttledLease(1_200, 2), 1, law);
    expect(nextRound.capacity).toBeCloseTo(4.9, 3); // on the 1/1024 grid
    expect(nextRound.decreased).toBe(true);
  });

  it('never goes below MIN_CAPACITY (1/64 permit) per shard, and goes below one permit when S3 says so', () => {
    let state: AdaptiveState = { capacity: 2, latencyMs: 20, decreasedAt: 0 };
    const seen: number[] = [];
    for (let t = 1; t < 20; t++) {
      state = adaptLimit(state, lease({ t: t * 1_000, throttled: 2 }), 1, law);
      seen.push(state.capacity);
    }
    expect(seen.some((c) => c > MIN_CAPACITY && c < 1)).toBe(true);
    expect(state.capacity).toBe(MIN_CAPACITY);
  });

  it('grows a limit under one permit in steps of an eighth of itself, not by a whole permit', () => {
    const small = resolveAdaptiveLimitOptions({
      ratePerSecond: 50,
      initialLatencyMs: 15,
      latencyWeight: 0.5,
    });
    // 0.5 permits held 150 ms for 5 attempts: 15 permit-ms each, the latency stays 15 ms; ceiling 0.75.
    const state: AdaptiveState = { capacity: 0.5, latencyMs: 15, decreasedAt: 0 };
    const step = adaptLimit(state, lease({ t: 1, permits: 0.5, releasedAt: 150, succeeded: 5 }), 1, small);
    expect(step.capacity).toBe(0.5625);
  });

  it('a lease that began before the last decrease does not grow the limit back', () => {
    const state: AdaptiveState = { capacity: 4, latencyMs: 100, decreasedAt: 5_000 };
    const before = adaptLimit(
      state,
      lease({ t: 4_900, permits: 2, wanted: 10, succeeded: 5, attemptMs: steady(state, 5) }),
      1,
      law,
    );
    expect(before.capacity).toBe(4);
    const after = adaptLimit(
      state,
      lease({ t: 5_100, permits: 2, wanted: 10, succeeded: 5, attemptMs: steady(state, 5) }),
      1,
      law,
    );
    // Soon after a decrease the increase is cautious: 1/64 of the capacity, not 1/8.
    expect(after.capacity).toBe(4.0625);
  });

  it(`grows cautiously (1/64) for ${CAUTIOUS_FOR_MS / 1000} s after a decrease, then probes at 1/8 again`, () => {
    const state: AdaptiveState = { capacity: 8, latencyMs: 100, decreasedAt: 1_000_000 };
    const grow = (t: number) =>
      adaptLimit(
        state,
        lease({ t, permits: 8, wanted: 20, succeeded: 10, releasedAt: 100, attemptMs: steady(state, 10) }),
        1,
        resolveAdaptiveLimitOptions({ ratePerSecond: 1_000, increaseStep: 4 }),
      ).capacity;
    expect(grow(1_000_100)).toBe(8 + 8 * CAUTIOUS_INCREASE_SHARE);
    // Released exactly CAUTIOUS_FOR_MS after the decrease: probing again.
    expect(grow(1_000_000 + CAUTIOUS_FOR_MS - 100)).toBe(9);
    // Never decreased: probing from the start.
    expect(
      adaptLimit(
        { ...state, decreasedAt: 0 },
        lease({
          t: 100,
          permits: 8,
          wanted: 20,
          succeeded: 10,
          releasedAt: 100,
          attemptMs: steady(state, 10),
        }),
        1,
        resolveAdaptiveLimitOptions({ ratePerSecond: 1_000, increaseStep: 4 }),
      ).capacity,
    ).toBe(9);
  });

  it('re-converges after the accepted rate halves: from the old level to half of it in a few rounds', () => {
    // A toy fleet on a virtual clock: each 100 ms round one lease of all permits; S3 accepts `accepted`
    // attempts per second and throttles the rest; an attempt takes 20 ms of a permit.
    const fleetLaw = resolveAdaptiveLimitOptions({ ratePerSecond: 100, initialLatencyMs: 20 });
    let state = initialState(1, fleetLaw);
    let accepted = 100;
    const permitsAt: number[] = [];
    for (let round = 0; round < 100; round++) {
      const t = round * 100;
      if (t === 5_000) accepted = 50;
      const permits = Math.floor(state.capacity);
      const attempts = permits * 5; // 100 ms / 20 ms per permit
      const ok = Math.min(attempts, accepted / 10);
      state = adaptLimit(
        state,
        { takenAt: t, releasedAt: t + 100, permits, wanted: 10, succeeded: ok, throttled: attempts - ok },
        1,
        fleetLaw,
      );
      permitsAt.push(Math.floor(state.capacity));
    }
    // Before the halving: 100/s x 20 ms = 2 permits; after: at most 1 (50/s x 20 ms) within 1 s.
    expect(permitsAt[49]).toBe(2);
    expect(Math.max(...permitsAt.slice(60))).toBeLessThanOrEqual(2);
    expect(permitsAt.slice(50, 60)).toContain(1);
  });

  it('holds still on one SlowDown (or 1% of the attempts), and grows only on leases S3 never refused', () => {
    const state: AdaptiveState = { capacity: 2, latencyMs: 100, decreasedAt: 0 };
    // One 503 in ten attempts: noise. Neither a decrease nor an increase.
    const one = adaptLimit(
      state,
      lease({ t: 1, succeeded: 9, throttled: 1, attemptMs: steady(state, 10) }),
      1,
      law,
    );
    expect(one).toMatchObject({ capacity: 2, decreased: false });
    // 2 in 300 attempts (0.67%): still within 1%.
    const few = adaptLimit(
      state,
      lease({ t: 1, succeeded: 298, throttled: 2, attemptMs: steady(state, 300) }),
      1,
      law,
    );
    expect(few).toMatchObject({ capacity: 2, decreased: false });
    // 4 in 300 (1.3%): overload; the share refused is small, so the decrease is decreaseFactor (0.7).
    const more = adaptLimit(
      state,
      lease({ t: 1, succeeded: 296, throttled: 4, attemptMs: steady(state, 300) }),
      1,
      law,
    );
    expect(more.decreased).toBe(true);
    expect(more.capacity).toBeCloseTo(1.4, 2); // on the 1/1024 grid
    expect(overloaded({ succeeded: 9, throttled: 1 })).toBe(false);
    // Exactly 1% of the attempts (3 of 300, the refused ones counted): still noise.
    expect(overloaded({ succeeded: 297, throttled: 3 })).toBe(false);
    expect(overloaded({ succeeded: 296, throttled: 4 })).toBe(true);
    expect(overloaded({ succeeded: 8, throttled: 2 })).toBe(true);
  });

  it('shrinks in proportion to the share refused, down to half in one release', () => {
    const state: AdaptiveState = { capacity: 2, latencyMs: 100, decreasedAt: 0 };
    // 40% refused: x 0.6 (deeper than decreaseFactor 0.7).
    const forty = adaptLimit(
      state,
      lease({ t: 1, succeeded: 60, throttled: 40, attemptMs: steady(state, 100) }),
      1,
      law,
    );
    expect(forty.capacity).toBeCloseTo(1.2, 2);
    // 90% refused: never below half.
    const ninety = adaptLimit(
      state,
      lease({ t: 1, succeeded: 10, throttled: 90, attemptMs: steady(state, 100) }),
      1,
      law,
    );
    expect(ninety.capacity).toBe(1);
  });

  it("an overloaded lease's holder cut to a share of its grant: the limit goes there at once (>= half)", () => {
    const state: AdaptiveState = { capacity: 2, latencyMs: 100, decreasedAt: 0 };
    // 10% refused alone shrinks by decreaseFactor (0.7); the holder's governor found its way down to 0.55.
    const overloaded = { t: 1, succeeded: 90, throttled: 10, attemptMs: steady(state, 100) };
    expect(adaptLimit(state, lease(overloaded), 1, law).capacity).toBeCloseTo(1.4, 2);
    expect(adaptLimit(state, lease({ ...overloaded, keptShare: 0.55 }), 1, law).capacity).toBeCloseTo(1.1, 2);
    // Never below half in one release, and a share above the decrease changes nothing.
    expect(adaptLimit(state, lease({ ...overloaded, keptShare: 0.2 }), 1, law).capacity).toBe(1);
    expect(adaptLimit(state, lease({ ...overloaded, keptShare: 0.95 }), 1, law).capacity).toBeCloseTo(1.4, 2);
    // Not overloaded (noise): the share is no reason to shrink.
    const calm = lease({
      t: 1,
      succeeded: 300,
      throttled: 1,
      attemptMs: steady(state, 301),
      keptShare: 0.85,
    });
    expect(adaptLimit(state, calm, 1, law).capacity).toBe(2);
  });

  it('keeps capacities on a 1/1024 grid, so free = capacity - held adds up exactly however often it moves', () => {
    let state: AdaptiveState = { capacity: 10, latencyMs: 200, decreasedAt: 0 };
    let free = state.capacity; // what the shard item would hold with nothing held: sums of the deltas
    for (let round = 1; round <= 40; round++) {
      const throttled = round % 3 === 0 ? 3 : 0;
      const step = adaptLimit(
        state,
        lease({ t: round * 1_000, permits: 20, succeeded: 10 - throttled, throttled }),
        1,
        law,
      );
      expect(step.capacity * 1024).toBe(Math.round(step.capacity * 1024));
      free += step.capacity - state.capacity;
      state = step;
    }
    expect(free).toBe(state.capacity);
  });

  it('refuses nonsense options with a typed error', () => {
    for (const bad of [
      { ratePerSecond: 0 },
      { ratePerSecond: 10, decreaseFactor: 1 },
      { ratePerSecond: 10, decreaseFactor: 0 },
      { ratePerSecond: 10, increaseStep: -1 },
      { ratePerSecond: 10, latencyWeight: 0 },
      { ratePerSecond: 10, headroom: 0.5 },
      { ratePerSecond: 10, initialLatencyMs: Number.NaN },
    ]) {
      expect(() => resolveAdaptiveLimitOptions(bad)).toThrow(InvalidSemaphoreOptionsError);
    }
  });
});
