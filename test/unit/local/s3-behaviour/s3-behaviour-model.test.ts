import { describe, expect, it } from 'vitest';
import { InvalidLocalOptionError } from '../../../../lib/local/errors.js';
import { ManualClock } from '../../../../lib/local/s3-behaviour/clock.js';
import { S3BehaviourModel, type S3Outcome } from '../../../../lib/local/s3-behaviour/s3-behaviour-model.js';

/** Offers `offeredPerSecond` evenly spaced requests for `seconds` of virtual time; returns accepted count. */
function drive(
  model: S3BehaviourModel,
  clock: ManualClock,
  kind: 'read' | 'write',
  key: string,
  offeredPerSecond: number,
  seconds: number,
): number {
  const step = 1000 / offeredPerSecond;
  let accepted = 0;
  const total = Math.round(offeredPerSecond * seconds);
  for (let i = 0; i < total; i++) {
    clock.advance(step);
    if (model.decide(kind, key).outcome === 'ok') accepted++;
  }
  return accepted;
}

describe('S3BehaviourModel throttling (virtual clock)', () => {
  it('accepts the configured write rate per prefix and throttles the rest', () => {
    const clock = new ManualClock();
    const model = new S3BehaviourModel({ clock, writesPerSecond: 3500, burstSeconds: 0.1 });
    // Offer 3x the limit for 10 s: accepted = burst (350) + 3500/s x 10 s.
    const accepted = drive(model, clock, 'write', 't=acme/r=orders/id=1.json', 10_500, 10);
    expect(accepted).toBeGreaterThanOrEqual(35_000);
    expect(accepted).toBeLessThanOrEqual(35_000 + 350 + 1);
    const stats = model.stats();
    expect(stats.byPrefix['t=acme/']?.throttled).toBe(105_000 - accepted);
    expect(stats.total.ok).toBe(accepted);
  });

  it('limits reads separately at their own default rate of 5500/s', () => {
    const clock = new ManualClock();
    const model = new S3BehaviourModel({ clock });
    const writes = drive(model, clock, 'write', 't=a/x', 8000, 5);
    // Reads on the same prefix draw from a bucket the writes did not touch.
    const reads = drive(model, clock, 'read', 't=a/x', 8000, 5);
    expect(writes / 5).toBeGreaterThan(3500 * 0.99);
    expect(writes / 5).toBeLessThan(3500 * 1.03);
    expect(reads / 5).toBeGreaterThan(5500 * 0.99);
    expect(reads / 5).toBeLessThan(5500 * 1.03);
  });

  it('keeps each prefix to its own bucket', () => {
    const clock = new ManualClock();
    const model = new S3BehaviourModel({ clock, writesPerSecond: 100, burstSeconds: 0.01 });
    let acme = 0;
    let globex = 0;
    for (let i = 0; i < 2000; i++) {
      clock.advance(1);
      if (model.decide('write', `t=acme/r/id=${i}`).outcome === 'ok') acme++;
      if (model.decide('write', `t=globex/r/id=${i}`).outcome === 'ok') globex++;
    }
    // 2 s at 100/s each, plus a burst of one.
    expect(acme).toBeGreaterThanOrEqual(200);
    expect(acme).toBeLessThanOrEqual(201);
    expect(globex).toBe(acme);
    expect(Object.keys(model.stats().byPrefix).sort()).toEqual(['t=acme/', 't=globex/']);
  });

  it('counts writes apart from reads, per prefix and in total (the write limit is on writes only)', () => {
    const clock = new ManualClock();
    const model = new S3BehaviourModel({ clock, writesPerSecond: 10, burstSeconds: 1 });
    for (let i = 0; i < 25; i++) model.decide('write', `t=hot/${i}`);
    for (let i = 0; i < 7; i++) model.decide('read', `t=hot/${i}`);
    const hot = model.stats().byPrefix['t=hot/']!;
    expect(hot.requests).toBe(32);
    expect(hot.ok).toBe(10 + 7);
    expect(hot.writes).toEqual({ requests: 25, ok: 10, throttled: 15 });
    expect(model.stats().total.writes).toEqual({ requests: 25, ok: 10, throttled: 15 });
    // A copy: counting on does not change what was returned.
    model.decide('write', 't=hot/x');
    expect(hot.writes.requests).toBe(25);
    model.resetStats();
    expect(model.stats().total.writes).toEqual({ requests: 0, ok: 0, throttled: 0 });
  });

  it('uses the whole key as prefix when it has no slash, and a custom prefixOf when given', () => {
    const model = new S3BehaviourModel();
    model.decide('write', 'plainkey');
    expect(Object.keys(model.stats().byPrefix)).toEqual(['plainkey']);
    const custom = new S3BehaviourModel({ prefixOf: (key) => key.split('/').slice(0, 2).join('/') });
    custom.decide('read', 't=a/r=b/id=1');
    expect(Object.keys(custom.stats().byPrefix)).toEqual(['t=a/r=b']);
  });

  it('applies setRates live: halving the limit halves the accepted rate from then on', () => {
    const clock = new ManualClock();
    const model = new S3BehaviourModel({ clock, writesPerSecond: 1000, burstSeconds: 0.001 });
    const before = drive(model, clock, 'write', 'p/', 4000, 5);
    model.setRates({ writesPerSecond: 500 });
    expect(model.rates.writesPerSecond).toBe(500);
    const after = drive(model, clock, 'write', 'p/', 4000, 5);
    expect(before / 5).toBeCloseTo(1000, -1);
    expect(after / 5).toBeCloseTo(500, -1);
  });

  it('throttles everything at rate 0 and nothing at rate Infinity', () => {
    const zero = new S3BehaviourModel({ writesPerSecond: 0 });
    expect(zero.decide('write', 'k').outcome).toBe('slowdown');
    const unlimited = new S3BehaviourModel({ readsPerSecond: Number.POSITIVE_INFINITY });
    for (let i = 0; i < 10_000; i++) expect(unlimited.decide('read', 'k').outcome).toBe('ok');
  });
});

describe('S3BehaviourModel faults and latency', () => {
  it('injects each fault at its configured rate (within 10% over 20k requests)', () => {
    const model = new S3BehaviourModel({
      writesPerSecond: Number.POSITIVE_INFINITY,
      faults: { internalErrorRate: 0.05, resetRate: 0.02, stallRate: 0.01, stallMs: 1234 },
      seed: 42,
    });
    const n = 20_000;
    for (let i = 0; i < n; i++) {
      const d = model.decide('write', `t=x/${i}`);
      if (d.outcome === 'stall') expect(d.latencyMs).toBe(1234);
    }
    const { total } = model.stats();
    expect(total.requests).toBe(n);
    expect(total.internalErrors / n).toBeGreaterThan(0.05 * 0.9);
    expect(total.internalErrors / n).toBeLessThan(0.05 * 1.1);
    expect(total.resets / n).toBeGreaterThan(0.02 * 0.9);
    expect(total.resets / n).toBeLessThan(0.02 * 1.1);
    expect(total.stalls / n).toBeGreaterThan(0.01 * 0.85);
    expect(total.stalls / n).toBeLessThan(0.01 * 1.15);
    expect(total.ok + total.internalErrors + total.resets + total.stalls).toBe(n);
  });

  it('answers slowDownRate of all requests SlowDown on top of the buckets, without spending tokens', () => {
    const clock = new ManualClock(0);
    const model = new S3BehaviourModel({
      clock,
      writesPerSecond: 1000,
      burstSeconds: 1,
      faults: { slowDownRate: 0.1, internalErrorRate: 0.01 },
      seed: 3,
    });
    const n = 20_000;
    // Offered far under the 1,000/s limit (10 per virtual second): every SlowDown here is an injected one.
    for (let i = 0; i < n; i++) {
      clock.advance(100);
      model.decide('write', 't=x/k');
    }
    const { total } = model.stats();
    expect(total.throttled / n).toBeGreaterThan(0.1 * 0.9);
    expect(total.throttled / n).toBeLessThan(0.1 * 1.1);
    // The other faults apply to what the dice let through: 1% of the remaining 90%.
    expect(total.internalErrors / n).toBeGreaterThan(0.009 * 0.8);
    expect(total.internalErrors / n).toBeLessThan(0.009 * 1.2);
    expect(() => new S3BehaviourModel({ faults: { slowDownRate: 1.5 } })).toThrow(/slowDownRate/);
  });

  it('repeats exactly for one seed and differs for another', () => {
    const run = (seed: number): S3Outcome[] => {
      const model = new S3BehaviourModel({ seed, faults: { internalErrorRate: 0.3, resetRate: 0.3 } });
      return Array.from({ length: 200 }, (_, i) => model.decide('read', `k${i}`).outcome);
    };
    expect(run(7)).toEqual(run(7));
    expect(run(7)).not.toEqual(run(8));
  });

  it('draws lognormal latency with the configured median and p99', () => {
    const model = new S3BehaviourModel({
      readsPerSecond: Number.POSITIVE_INFINITY,
      latency: { medianMs: 20, p99Ms: 120 },
    });
    const samples = Array.from({ length: 50_000 }, () => model.decide('read', 'k').latencyMs).sort(
      (a, b) => a - b,
    );
    const median = samples[samples.length / 2]!;
    const p99 = samples[Math.floor(samples.length * 0.99)]!;
    expect(median).toBeGreaterThan(19);
    expect(median).toBeLessThan(21);
    expect(p99).toBeGreaterThan(108);
    expect(p99).toBeLessThan(132);
    expect(samples[0]).toBeGreaterThan(0);
  });

  it('adds no latency by default and resets its counters on demand', () => {
    const model = new S3BehaviourModel();
    expect(model.decide('write', 'a/b')).toEqual({ outcome: 'ok', latencyMs: 0 });
    model.resetStats();
    expect(model.stats()).toEqual({
      total: {
        requests: 0,
        ok: 0,
        throttled: 0,
        internalErrors: 0,
        resets: 0,
        stalls: 0,
        writes: { requests: 0, ok: 0, throttled: 0 },
      },
      byPrefix: {},
    });
  });

  it('rejects invalid options with a typed error naming the option', () => {
    const bad = (options: ConstructorParameters<typeof S3BehaviourModel>[0], option: string) => {
      try {
        new S3BehaviourModel(options);
        expect.unreachable('constructor should throw');
      } catch (error) {
        expect(error).toBeInstanceOf(InvalidLocalOptionError);
        expect((error as InvalidLocalOptionError).name).toBe('InvalidLocalOptionError');
        expect((error as InvalidLocalOptionError).option).toBe(option);
      }
    };
    bad({ writesPerSecond: -1 }, 'writesPerSecond');
    bad({ readsPerSecond: Number.NaN }, 'readsPerSecond');
    bad({ burstSeconds: 0 }, 'burstSeconds');
    bad({ latency: { medianMs: 20, p99Ms: 10 } }, 'latency.p99Ms');
    bad({ faults: { resetRate: 1.5 } }, 'faults.resetRate');
    bad({ faults: { resetRate: 0.6, internalErrorRate: 0.6 } }, 'faults');
    bad({ seed: 1.5 }, 'seed');
  });
});

describe('ManualClock', () => {
  it('wakes sleepers in deadline order as time advances and rejects on abort', async () => {
    const clock = new ManualClock(100);
    const woke: number[] = [];
    const a = clock.sleep(50).then(() => woke.push(50));
    const b = clock.sleep(10).then(() => woke.push(10));
    const controller = new AbortController();
    const c = clock.sleep(5, controller.signal);
    controller.abort(new Error('gone'));
    await expect(c).rejects.toMatchObject({ name: 'Error', message: 'gone' });
    expect(clock.pendingSleeps).toBe(2);
    clock.advance(20);
    await b;
    expect(woke).toEqual([10]);
    clock.advance(100);
    await a;
    expect(woke).toEqual([10, 50]);
    expect(clock.now()).toBe(220);
  });
});
