// The adaptive limit's control law at its edges: the documented defaults, the bounds of every option
// (accepted at the bound, refused past it, with a message naming the key), the latency sample when holders
// measure attempts themselves and its clamps, and the strict comparisons that decide a decrease or an
// increase.
import { describe, expect, it } from 'vitest';
import {
  type AdaptiveLimitOptions,
  type AdaptiveState,
  adaptLimit,
  CAPACITY_QUANTUM,
  ceilingPerShard,
  initialState,
  type LeaseOutcome,
  MIN_CAPACITY,
  quantize,
  rescaleForLatency,
  resolveAdaptiveLimitOptions,
} from '../../../lib/semaphore/adaptive-limit.js';
import { InvalidSemaphoreOptionsError } from '../../../lib/semaphore/errors.js';

const law = resolveAdaptiveLimitOptions({ ratePerSecond: 100, initialLatencyMs: 20, latencyWeight: 0.5 });

const outcome = (over: Partial<LeaseOutcome> = {}): LeaseOutcome => ({
  takenAt: 1_000,
  releasedAt: 1_100,
  permits: 2,
  wanted: 2,
  succeeded: 10,
  throttled: 0,
  ...over,
});

function refusal(options: AdaptiveLimitOptions): Error {
  try {
    resolveAdaptiveLimitOptions(options);
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidSemaphoreOptionsError);
    return err as Error;
  }
  throw new Error(`accepted ${JSON.stringify(options)}`);
}

describe('adaptive limit options', () => {
  it('documents its defaults: 20 ms, 0.7, 1 permit, 0.3, headroom 1, no in-flight slack', () => {
    expect(resolveAdaptiveLimitOptions({ ratePerSecond: 3500 })).toEqual({
      ratePerSecond: 3500,
      initialLatencyMs: 20,
      decreaseFactor: 0.7,
      increaseStep: 1,
      latencyWeight: 0.3,
      headroom: 1,
      inFlightSlack: 1,
    });
  });

  it('accepts every option at its bound', () => {
    expect(resolveAdaptiveLimitOptions({ ratePerSecond: 1, latencyWeight: 1, headroom: 1 })).toMatchObject({
      latencyWeight: 1,
      headroom: 1,
    });
    expect(
      resolveAdaptiveLimitOptions({
        ratePerSecond: 0.5,
        initialLatencyMs: 0.5,
        increaseStep: 0.01,
        decreaseFactor: 0.01,
      }),
    ).toMatchObject({ ratePerSecond: 0.5, initialLatencyMs: 0.5, increaseStep: 0.01, decreaseFactor: 0.01 });
  });

  it('refuses each option past its bound with a message naming the key and the value', () => {
    const cases: [AdaptiveLimitOptions, string][] = [
      [{ ratePerSecond: Number.POSITIVE_INFINITY }, 'adaptive.ratePerSecond must be > 0, got Infinity'],
      [{ ratePerSecond: -1 }, 'adaptive.ratePerSecond must be > 0, got -1'],
      [{ ratePerSecond: 1, initialLatencyMs: 0 }, 'adaptive.initialLatencyMs must be > 0, got 0'],
      [
        { ratePerSecond: 1, initialLatencyMs: Number.POSITIVE_INFINITY },
        'adaptive.initialLatencyMs must be > 0, got Infinity',
      ],
      [{ ratePerSecond: 1, decreaseFactor: 1 }, 'adaptive.decreaseFactor must be in (0, 1), got 1'],
      [{ ratePerSecond: 1, decreaseFactor: 0 }, 'adaptive.decreaseFactor must be in (0, 1), got 0'],
      [{ ratePerSecond: 1, increaseStep: 0 }, 'adaptive.increaseStep must be > 0, got 0'],
      [
        { ratePerSecond: 1, increaseStep: Number.POSITIVE_INFINITY },
        'adaptive.increaseStep must be > 0, got Infinity',
      ],
      [{ ratePerSecond: 1, latencyWeight: 1.01 }, 'adaptive.latencyWeight must be in (0, 1], got 1.01'],
      [{ ratePerSecond: 1, latencyWeight: 0 }, 'adaptive.latencyWeight must be in (0, 1], got 0'],
      [{ ratePerSecond: 1, headroom: 0.99 }, 'adaptive.headroom must be >= 1, got 0.99'],
      [
        { ratePerSecond: 1, headroom: Number.POSITIVE_INFINITY },
        'adaptive.headroom must be >= 1, got Infinity',
      ],
    ];
    for (const [options, message] of cases) expect(refusal(options).message).toContain(message);
  });
});

describe("Little's law per shard", () => {
  it('is rate x latency x headroom over the shards, never under MIN_CAPACITY', () => {
    const roomy = resolveAdaptiveLimitOptions({ ratePerSecond: 1_000, headroom: 1.5 });
    expect(ceilingPerShard(20, 2, roomy)).toBe(15); // 1000/s x 20 ms x 1.5 / 2
    expect(ceilingPerShard(0.001, 1, roomy)).toBe(MIN_CAPACITY);
  });

  it("starts at Little's law on the 1/1024 grid (whole permits or not), without headroom", () => {
    const at = (ratePerSecond: number, shards: number) =>
      initialState(shards, resolveAdaptiveLimitOptions({ ratePerSecond, initialLatencyMs: 10, headroom: 2 }));
    // 35 / 3 = 11.67: the nearest 1/1024, not 11 (a rounded-down start stood for 6% less than the rate).
    expect(at(3_500, 3)).toEqual({ capacity: quantize(35 / 3), latencyMs: 10, decreasedAt: 0 });
    expect(at(100, 1).capacity).toBe(1); // exactly one
    expect(at(99, 1).capacity).toBe(quantize(0.99));
    expect(quantize(0.99)).toBe(1014 * CAPACITY_QUANTUM);
  });
});

describe('adaptLimit', () => {
  const state: AdaptiveState = { capacity: 2, latencyMs: 20, decreasedAt: 0 };

  it('takes the latency the holder measured, when it did, instead of permit-milliseconds', () => {
    // 10 attempts of 10 ms each; averaged with 20 at weight 0.5.
    const step = adaptLimit(state, outcome({ attemptMs: 100, releasedAt: 5_000 }), 1, law);
    expect(step.latencyMs).toBe(15);
  });

  it('clamps the latency to [0.1 ms, 60 s] and ignores leases that held nothing or ran nothing', () => {
    const eager = resolveAdaptiveLimitOptions({ ratePerSecond: 100, latencyWeight: 1 });
    expect(adaptLimit(state, outcome({ attemptMs: 0 }), 1, eager).latencyMs).toBe(0.1);
    expect(adaptLimit(state, outcome({ attemptMs: 10_000_000 }), 1, eager).latencyMs).toBe(60_000);
    expect(adaptLimit(state, outcome({ permits: 0 }), 1, eager).latencyMs).toBe(20);
    expect(adaptLimit(state, outcome({ succeeded: 0 }), 1, eager).latencyMs).toBe(20);
    // Throttled attempts are attempts too: 2 permits x 100 ms / 4 attempts = 50.
    expect(adaptLimit(state, outcome({ succeeded: 0, throttled: 4 }), 1, eager).latencyMs).toBe(50);
    // A clock that went backwards counts as no time held.
    expect(adaptLimit(state, outcome({ releasedAt: 900 }), 1, eager).latencyMs).toBe(0.1);
  });

  it('a decrease needs a lease taken strictly after the last one, and stamps its release time', () => {
    const cut = { capacity: 10, latencyMs: 200, decreasedAt: 1_000 };
    // 3 of 10 attempts refused: more than noise explains.
    // Measured at the shard's latency (200 ms per attempt): the latency, and so the permits, hold still.
    const overloaded = { succeeded: 7, throttled: 3, permits: 20, attemptMs: 2_000 };
    const same = adaptLimit(cut, outcome({ takenAt: 1_000, ...overloaded }), 1, law);
    expect(same).toMatchObject({ capacity: 10, decreased: false, decreasedAt: 1_000 });
    const later = adaptLimit(cut, outcome({ takenAt: 1_001, ...overloaded }), 1, law);
    expect(later).toMatchObject({ capacity: 7, decreased: true, decreasedAt: 1_100 });
  });

  it('an increase needs a lease that wanted strictly more than it got, succeeded, and began after the last decrease', () => {
    const roomy: AdaptiveState = { capacity: 40, latencyMs: 2_000, decreasedAt: 1_000 };
    const grow = (over: Partial<LeaseOutcome>) =>
      adaptLimit(
        roomy,
        outcome({ takenAt: 1_001, permits: 40, wanted: 41, attemptMs: 20_000, ...over }),
        1,
        law,
      ).capacity;
    // + 1/64 of 40 (a decrease 1 ms before: cautious), under increaseStep.
    expect(grow({})).toBe(40.625);
    expect(grow({ wanted: 40 })).toBe(40);
    expect(grow({ takenAt: 1_000 })).toBe(40);
  });

  it('a step bounded by the ceiling uses the latency this lease brought', () => {
    // Latency 20 -> (20 + 10) / 2 = 15 ms: ceiling 100/s x 15 ms = 1.5, under the capacity of 2.
    const step = adaptLimit(state, outcome({ attemptMs: 100 }), 1, law);
    expect(step.capacity).toBe(1.5);
  });
});

describe('rescaleForLatency (a lease resized mid-lease)', () => {
  const state: AdaptiveState = { capacity: 2, latencyMs: 20, decreasedAt: 7 };

  it('moves the latency to a slower sample at once and the capacity with it (the same rate)', () => {
    expect(rescaleForLatency(state, 30, 1, law)).toEqual({ capacity: 3, latencyMs: 30, decreasedAt: 7 });
    // Below its ceiling (a limit S3 made shrink): the same rate too, still below.
    const shrunk = { capacity: 1, latencyMs: 20, decreasedAt: 7 };
    expect(rescaleForLatency(shrunk, 30, 1, law)).toEqual({ capacity: 1.5, latencyMs: 30, decreasedAt: 7 });
  });

  it('never more than x4 per resize, and never past the ceiling (rate x latency)', () => {
    expect(rescaleForLatency(state, 100, 1, law)).toEqual({ capacity: 8, latencyMs: 80, decreasedAt: 7 });
    // Up to x4 the sample itself (a cold first lease measured x2.6).
    expect(rescaleForLatency(state, 60, 1, law)).toEqual({ capacity: 6, latencyMs: 60, decreasedAt: 7 });
    // A capacity above its ceiling (a rate configured lower since it was stored) is brought to the ceiling.
    const full = { capacity: 2, latencyMs: 10, decreasedAt: 0 };
    expect(rescaleForLatency(full, 15, 1, law)).toEqual({ capacity: 1.5, latencyMs: 15, decreasedAt: 0 });
    // Two shards share the ceiling.
    expect(rescaleForLatency(state, 30, 2, law)?.capacity).toBe(1.5);
  });

  it('a sample no slower than the average: no step (a resize only grows)', () => {
    expect(rescaleForLatency(state, 20, 1, law)).toBeUndefined();
    expect(rescaleForLatency(state, 5, 1, law)).toBeUndefined();
    expect(rescaleForLatency(state, Number.NaN, 1, law)).toBeUndefined();
  });

  it('on the capacity grid, at least MIN_CAPACITY', () => {
    const tiny = { capacity: MIN_CAPACITY, latencyMs: 0.1, decreasedAt: 0 };
    const step = rescaleForLatency(tiny, 0.13, 1, law)!;
    expect(step.capacity).toBeGreaterThanOrEqual(MIN_CAPACITY);
    expect(step.capacity / CAPACITY_QUANTUM).toBe(Math.round(step.capacity / CAPACITY_QUANTUM));
  });
});
