import { describe, expect, it } from 'vitest';
import { GradientLimit } from '../../../lib/pool/autotune/gradient-limit.js';
import { Autotuner, isCongestionSignal } from '../../../lib/pool/autotune/index.js';
import { MemoryCap } from '../../../lib/pool/autotune/memory-cap.js';
import { AUTOTUNE_DEFAULTS } from '../../../lib/pool/autotune/options.js';
import { ThrottleRateLimit } from '../../../lib/pool/autotune/throttle-rate-limit.js';
import { TaskTimeoutError } from '../../../lib/pool/index.js';
import { FakePool, slowDown } from './autotune/fake-pool.js';

function gradient(initialLimit = 10) {
  return new GradientLimit({
    ...AUTOTUNE_DEFAULTS.gradient,
    initialLimit,
    minLimit: 1,
    maxLimit: 1000,
    targetLatency: Infinity,
  });
}

describe('GradientLimit', () => {
  it('slow-starts (+1 per sample, x2 per round trip) until the first congestion signal', () => {
    const g = gradient(10);
    for (let i = 0; i < 10; i++) g.onSample(20, 10);
    expect(g.limit).toBe(10); // warm-up
    for (let i = 0; i < 10; i++) g.onSample(20, 10);
    expect(g.limit).toBe(20); // one round trip of 10 samples doubled it
    expect(g.slowStart).toBe(true);
  });

  it('after slow start grows by at most x1.25 per round trip while latency is flat and the limit is in use', () => {
    const g = gradient(10);
    for (let i = 0; i < 10; i++) g.onSample(20, 10);
    g.endSlowStart();
    g.onSample(20, 10);
    expect(g.limit).toBeGreaterThan(10);
    expect(g.limit).toBeLessThanOrEqual(10.25);
    for (let i = 0; i < 200; i++) g.onSample(20, Math.ceil(g.limit));
    expect(g.limit).toBeGreaterThan(40);
    expect(g.slowStart).toBe(false);
  });

  it('does not grow when app-limited (under half the limit in flight)', () => {
    const g = gradient(40);
    for (let i = 0; i < 100; i++) g.onSample(20, 5);
    expect(g.limit).toBe(40);
  });

  it('shrinks when short-term latency climbs past tolerance x long-term', () => {
    const g = gradient(100);
    for (let i = 0; i < 300; i++) g.onSample(20, 100);
    const before = g.limit;
    for (let i = 0; i < 30; i++) g.onSample(200, 100);
    expect(g.limit).toBeLessThan(before * 0.5);
  });

  it('shrinks above targetLatency even when latency is steady', () => {
    const g = new GradientLimit({
      ...AUTOTUNE_DEFAULTS.gradient,
      initialLimit: 50,
      minLimit: 1,
      maxLimit: 1000,
      targetLatency: 50,
    });
    for (let i = 0; i < 100; i++) g.onSample(100, 50);
    expect(g.limit).toBeLessThan(10);
  });
});

describe('ThrottleRateLimit', () => {
  const noPrior = { beta: 0.9, recoverySeconds: 2, initialRate: Infinity };
  const prior = { beta: 0.9, recoverySeconds: 2, initialRate: 3500 };

  it('without a prior is unlimited until the first throttle, which halves what was being sent', () => {
    const t = new ThrottleRateLimit(noPrior);
    expect(t.onSuccess(0, true, 4000)).toBe(Infinity);
    expect(t.onThrottle(10, 0, true, 4000, 5000)).toBe(2000);
    // The halved rate is the plateau: it holds there, then probes up slowly (convex).
    expect(t.onSuccess(20, true, 2000)).toBeCloseTo(2000, 0);
    let rate = 0;
    for (let ms = 30; ms <= 1030; ms += 10) rate = t.onSuccess(ms, true, 2000);
    expect(rate).toBeGreaterThan(2000);
    expect(rate).toBeLessThan(2100);
  });

  it('cuts by beta once per round trip, then half a slot per refusal, never below half of what was sent', () => {
    const t = new ThrottleRateLimit(noPrior);
    expect(t.onThrottle(100, 80, true, 4000)).toBe(2000); // slow start ends: halve
    expect(t.onThrottle(110, 90, true, 4000, 40)).toBe(2000); // same overshoot: already paid for
    expect(t.onThrottle(150, 120, true, 4000, 40)).toBeCloseTo(0.9 * 2000, 5); // new round trip: beta
    expect(t.onThrottle(160, 130, true, 4000, 40)).toBeCloseTo(1800 - 20, 5); // its refusals: half a slot
    for (let i = 0; i < 200; i++) t.onThrottle(170, 140, true, 4000, 40);
    expect(t.rate).toBe(1000); // the round trip's floor: half of what was sent
    expect(t.counts).toEqual({ throttles: 204, cuts: 2 });
  });

  it('holds the rate it cut to, then probes beyond it convexly while busy', () => {
    const t = new ThrottleRateLimit(noPrior);
    t.onThrottle(0, 0, true, 2000); // plateau 1000
    let rate = 0;
    for (let ms = 10; ms <= 1000; ms += 10) rate = t.onSuccess(ms, true, 1000);
    expect(rate).toBeGreaterThanOrEqual(1000);
    expect(rate).toBeLessThan(1050);
    for (let ms = 1010; ms <= 3000; ms += 10) rate = t.onSuccess(ms, true, 1000);
    expect(rate).toBeGreaterThan(1250);
  });

  it('with a prior starts at initialRate as a plateau, and its first throttle cuts by beta, not by half', () => {
    const t = new ThrottleRateLimit(prior);
    expect(t.rate).toBe(3500);
    let rate = 0;
    for (let ms = 0; ms <= 1000; ms += 10) rate = t.onSuccess(ms, true, 3500);
    expect(rate).toBeGreaterThan(3500);
    expect(rate).toBeLessThan(3500 * 1.05);
    expect(t.onThrottle(1010, 1000, true, 3600, 40)).toBeCloseTo(0.9 * Math.min(rate, 3600), 5);
  });

  it('does not climb while the pool is idle', () => {
    const t = new ThrottleRateLimit(noPrior);
    t.onThrottle(0, 0, true, 1000);
    const cut = t.onSuccess(101, true, 1000);
    expect(t.onSuccess(10_000, false, 1000)).toBeCloseTo(cut, 0);
  });
});

describe('MemoryCap', () => {
  it('divides the memory left for in-flight work by the observed bytes per operation', () => {
    let used = 100;
    const cap = new MemoryCap({ targetPercent: 50, budgetBytes: 1000, usage: () => used, sampleEveryMs: 0 });
    expect(cap.onSample(0, 10)).toBe(Infinity); // no growth over the baseline yet
    used = 100 + 10 * 20; // 10 in flight at 20 bytes each
    expect(cap.onSample(1, 10)).toBe(Math.floor((500 - 100) / 20));
  });
});

describe('isCongestionSignal', () => {
  it('recognises SlowDown/503, 429, throttling names and timeouts, not other failures', () => {
    expect(isCongestionSignal(slowDown())).toBe(true);
    expect(isCongestionSignal({ name: 'X', $metadata: { httpStatusCode: 429 } })).toBe(true);
    expect(isCongestionSignal({ name: 'ThrottlingException' })).toBe(true);
    expect(isCongestionSignal(new TaskTimeoutError(100))).toBe(true);
    expect(isCongestionSignal({ name: 'InternalError', $metadata: { httpStatusCode: 500 } })).toBe(false);
    expect(isCongestionSignal(Object.assign(new Error('reset'), { code: 'ECONNRESET' }))).toBe(false);
    expect(isCongestionSignal(undefined)).toBe(false);
  });
});

describe('Autotuner isThrottle: the service says what a throttled answer is', () => {
  function throttledOnce(options: ConstructorParameters<typeof Autotuner>[1], error: unknown) {
    const pool = new FakePool(10);
    let now = 0;
    const tuner = new Autotuner(pool, { now: () => now, throttle: { initialRate: 2000 }, ...options });
    pool.activeCount = 9;
    for (let i = 0; i < 20; i++) {
      now += 2;
      pool.completed(20);
    }
    pool.failed(error, 20);
    return tuner.state();
  }

  it('cuts the rate on an error the injected classifier calls a throttle, whatever its name', () => {
    const refused = { status: 429 };
    const state = throttledOnce({ isThrottle: (e) => (e as { status?: number }).status === 429 }, refused);
    expect(state.throttles).toBe(1);
    expect(state.cuts).toBe(1);
    expect(state.rateLimit).toBeLessThan(2000);
  });

  it('ignores an error the injected classifier does not call a throttle, even a SlowDown', () => {
    const state = throttledOnce({ isThrottle: () => false }, slowDown());
    expect(state).toMatchObject({ throttles: 0, cuts: 0 });
  });

  it('defaults to the taxonomy (isCongestionSignal) and refuses a classifier that is not a function', () => {
    expect(throttledOnce({}, slowDown())).toMatchObject({ throttles: 1, cuts: 1 });
    const bad = { isThrottle: 'SlowDown' } as unknown as ConstructorParameters<typeof Autotuner>[1];
    expect(() => new Autotuner(new FakePool(10), bad)).toThrow(
      expect.objectContaining({ name: 'TypeError', message: expect.stringContaining('autotune.isThrottle') }),
    );
  });

  it("starts without a prior rate by default (a service limit is the caller's to give)", () => {
    expect(AUTOTUNE_DEFAULTS.throttle.initialRate).toBe(Number.POSITIVE_INFINITY);
    expect(new Autotuner(new FakePool(10), { now: () => 0 }).state().rateLimit).toBe(
      Number.POSITIVE_INFINITY,
    );
  });
});

describe('Autotuner on a hand-driven pool', () => {
  it('keeps retried attempts out of the latency statistics', () => {
    const pool = new FakePool(10);
    const tuner = new Autotuner(pool, { now: () => 0 });
    for (let i = 0; i < 20; i++) pool.completed(20);
    for (let i = 0; i < 20; i++) pool.completed(5000, 2);
    expect(tuner.state().longRttMs).toBeCloseTo(20, 5);
    expect(tuner.state().shortRttMs).toBeCloseTo(20, 5);
  });

  it('reacts per sample: a throttle lowers the pool concurrency at once (Little: rate x latency)', () => {
    const pool = new FakePool(10);
    let now = 0;
    const tuner = new Autotuner(pool, {
      now: () => now,
      initialConcurrency: 100,
      throttle: { initialRate: Number.POSITIVE_INFINITY },
    });
    pool.activeCount = 39;
    // 40 in flight at 25 ms = 1,600 completions/s (one per 0.625 ms) for 100 ms: meter and Little's law agree.
    for (let i = 0; i < 160; i++) {
      now += 0.625;
      pool.completed(25);
    }
    pool.activeCount = 39;
    pool.failed(slowDown(), 25);
    // Half of the ~1,600 req/s sent (the meter's 10 ms slots read a little under a full window).
    expect(tuner.state().rateLimit).toBeGreaterThan(700);
    expect(tuner.state().rateLimit).toBeLessThanOrEqual(800);
    expect(pool.concurrency).toBeGreaterThanOrEqual(18);
    expect(pool.concurrency).toBeLessThanOrEqual(20);
    expect(pool.setCalls.at(-1)).toBe(pool.concurrency);
  });

  it("starts at the prior rate's Little's-law concurrency once the first latencies are in", () => {
    const pool = new FakePool(10);
    let now = 0;
    new Autotuner(pool, { now: () => now, throttle: { initialRate: 2000 } });
    pool.activeCount = 9;
    for (let i = 0; i < 10; i++) {
      now += 2;
      pool.completed(20);
    }
    // 2,000 req/s x 20 ms = 40 in flight, at once (no ramp), and not beyond it.
    expect(pool.concurrency).toBe(40);
  });

  it('without a prior slow-starts from the initial concurrency instead (no jump)', () => {
    const pool = new FakePool(10);
    let now = 0;
    new Autotuner(pool, { now: () => now, throttle: { initialRate: Number.POSITIVE_INFINITY } });
    pool.activeCount = 9;
    for (let i = 0; i < 10; i++) {
      now += 2;
      pool.completed(20);
    }
    expect(pool.concurrency).toBe(10); // warm-up samples only
    for (let i = 0; i < 10; i++) pool.completed(20);
    expect(pool.concurrency).toBe(20); // +1 per sample
  });

  it('never goes below minConcurrency nor above maxConcurrency', () => {
    const pool = new FakePool(10);
    let now = 0;
    new Autotuner(pool, { now: () => now, minConcurrency: 3, maxConcurrency: 12 });
    pool.activeCount = 12;
    for (let i = 0; i < 500; i++) {
      now += 1;
      pool.completed(20);
    }
    expect(pool.concurrency).toBe(12);
    for (let i = 0; i < 50; i++) {
      now += 100;
      pool.failed(slowDown(), 20);
    }
    expect(pool.concurrency).toBe(3);
  });

  it('caps by memory', () => {
    const pool = new FakePool(10);
    let now = 0;
    let used = 1_000;
    new Autotuner(pool, {
      now: () => now,
      memoryBudgetBytes: 10_000,
      targetMemoryPercent: 50,
      memoryUsage: () => used,
    });
    pool.activeCount = 9;
    used = 1_000 + 10 * 500; // 500 bytes per in-flight operation
    now = 1000;
    pool.completed(20);
    expect(pool.concurrency).toBe(Math.floor((5_000 - 1_000) / 500));
  });

  it('with enabled: false observes but never sets the concurrency; detach stops listening', () => {
    const pool = new FakePool(10);
    const tuner = new Autotuner(pool, { enabled: false, now: () => 0 });
    pool.failed(slowDown(), 20);
    expect(pool.setCalls).toEqual([]);
    tuner.detach();
    expect(pool.events.listenerCount('pool:taskCompleted')).toBe(0);
    expect(pool.events.listenerCount('pool:taskError')).toBe(0);
  });

  it('rejects bad options with a RangeError naming the field', () => {
    expect(() => new Autotuner(new FakePool(), { minConcurrency: 0 })).toThrow(/minConcurrency/);
    expect(() => new Autotuner(new FakePool(), { minConcurrency: 5, maxConcurrency: 4 })).toThrow(
      /maxConcurrency/,
    );
    expect(() => new Autotuner(new FakePool(), { targetMemoryPercent: 120 })).toThrow(/targetMemoryPercent/);
    expect(() => new Autotuner(new FakePool(), { throttle: { beta: 1 } })).toThrow(/throttle.beta/);
  });
});
