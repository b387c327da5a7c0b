import { describe, expect, it } from 'vitest';
import {
  GrantGovernor,
  MIN_PACE,
  type ThrottleEvents,
} from '../../../../../lib/ingest/handler/run/grant-governor.js';
import type { PoolEvents } from '../../../../../lib/pool/events.js';
import { ExecutorPool } from '../../../../../lib/pool/index.js';
import { MIN_CAPACITY } from '../../../../../lib/semaphore/adaptive-limit.js';

type ErrorListener = (e: PoolEvents['pool:taskError']) => void;
type CompletedListener = (e: PoolEvents['pool:taskCompleted']) => void;

function slowDown(): Error {
  const error = new Error('Please reduce your request rate.') as Error & {
    $metadata: { httpStatusCode: number };
  };
  error.name = 'SlowDown';
  error.$metadata = { httpStatusCode: 503 };
  return error;
}

/** A pool's taskError / taskCompleted events and its concurrency, as the governor sees them. */
function fakePool(concurrency: number) {
  const errors = new Set<ErrorListener>();
  const completions = new Set<CompletedListener>();
  const listen = (event: string, l: ErrorListener | CompletedListener, add: boolean) => {
    const set = (event === 'pool:taskError' ? errors : completions) as Set<unknown>;
    if (add) set.add(l);
    else set.delete(l);
  };
  const pool = {
    concurrency,
    sets: 0,
    setConcurrency(n: number) {
      pool.concurrency = n;
      pool.sets += 1;
    },
    on: (event: string, l: ErrorListener | CompletedListener) => listen(event, l, true),
    off: (event: string, l: ErrorListener | CompletedListener) => listen(event, l, false),
    fail(error: unknown, durationMs: number) {
      for (const l of errors) l({ id: 't', attempt: 1, error, willRetry: true, durationMs });
    },
    succeed(durationMs: number) {
      for (const l of completions) l({ id: 't', attempt: 1, queueWaitMs: 0, durationMs });
    },
    get listeners() {
      return errors.size + completions.size;
    },
  };
  return pool as typeof pool & ThrottleEvents;
}

describe('GrantGovernor: a pool backs off inside its lease when S3 says SlowDown', () => {
  it('cuts to 0.85 x once per round trip, and ignores the rest of that round trip', () => {
    const pool = fakePool(4);
    let now = 1_000;
    const governor = new GrantGovernor(pool, pool, 4, { now: () => now });
    pool.fail(slowDown(), 20);
    expect(pool.concurrency).toBeCloseTo(3.4, 9);
    // A refusal of an attempt sent before that cut (it started 20 ms ago): same round trip, no cut.
    now += 5;
    pool.fail(slowDown(), 20);
    expect(pool.concurrency).toBeCloseTo(3.4, 9);
    // An attempt started after the cut and refused: the next round trip cuts again.
    now += 50;
    pool.fail(slowDown(), 20);
    expect(pool.concurrency).toBeCloseTo(2.89, 9);
    expect(governor.cuts).toBe(2);
    // Errors that are not throttling change nothing.
    now += 50;
    pool.fail(new Error('boom'), 20);
    expect(pool.concurrency).toBeCloseTo(2.89, 9);
    // Stopped: no listener left, no more cuts.
    governor.stop();
    expect(pool.listeners).toBe(0);
    now += 50;
    pool.fail(slowDown(), 20);
    expect(pool.concurrency).toBeCloseTo(2.89, 9);
  });

  it('takes back 1/128 of the grant per attempt accepted after the cut, never past the grant', () => {
    const pool = fakePool(4);
    let now = 1_000;
    const governor = new GrantGovernor(pool, pool, 4, { now: () => now });
    pool.fail(slowDown(), 20);
    expect(pool.concurrency).toBeCloseTo(3.4, 9);
    // Accepted, but sent before the cut: no evidence about the new rate.
    now += 5;
    pool.succeed(20);
    expect(pool.concurrency).toBeCloseTo(3.4, 9);
    // Sent after the cut and accepted: + 4/128 each, up to the grant and no further.
    now += 50;
    pool.succeed(20);
    expect(pool.concurrency).toBeCloseTo(3.43125, 9);
    for (let i = 0; i < 30; i++) {
      now += 50;
      pool.succeed(20);
    }
    expect(pool.concurrency).toBe(4);
    expect(governor.concurrency).toBe(4);
    governor.stop();
    expect(pool.listeners).toBe(0);
  });

  it('under a real overload the cuts outpace the recovery', () => {
    const pool = fakePool(2);
    let now = 0;
    new GrantGovernor(pool, pool, 2, { now: () => now });
    // Each round trip: one refused, two accepted (a third of the attempts refused, as when the limit halves).
    for (let round = 0; round < 10; round++) {
      now += 100;
      pool.fail(slowDown(), 20);
      now += 30;
      pool.succeed(20);
      pool.succeed(20);
    }
    // Halved within a few round trips (0.85 per cut, 2 x 1/128 of the grant back between cuts).
    expect(pool.concurrency).toBeLessThan(1);
  });

  it('never goes below MIN_CAPACITY (the prefix always progresses)', () => {
    const pool = fakePool(0.05);
    let now = 0;
    const governor = new GrantGovernor(pool, pool, 0.05, { now: () => now });
    for (let i = 0; i < 20; i++) {
      now += 1_000;
      pool.fail(slowDown(), 10);
    }
    expect(pool.concurrency).toBe(MIN_CAPACITY);
    expect(governor.concurrency).toBe(MIN_CAPACITY);
  });

  it('paces at the grant rate when quicker than the fleet: in flight = grant x own / fleet latency, >= 1/4 x', () => {
    const pool = fakePool(1);
    let now = 0;
    const governor = new GrantGovernor(pool, pool, 1, { latencyMs: 20, now: () => now });
    // Attempts twice as slow as the fleet's: never more than the grant in flight (the permits cap it).
    now += 40;
    pool.succeed(40);
    expect(pool.concurrency).toBe(1);
    expect(governor.inFlightCap).toBe(1);
    // Quicker ones bring it down (own latency is an average: 0.8 x 40 + 0.2 x 10 = 34 ms, then lower):
    // half the grant in flight at 10 ms carries the 50/s the grant stands for at 20 ms.
    for (let i = 0; i < 40; i++) {
      now += 10;
      pool.succeed(10);
    }
    expect(pool.concurrency).toBeCloseTo(0.5, 3);
    expect(governor.concurrency).toBe(1);
    // Slower again: back to the grant, no further.
    for (let i = 0; i < 40; i++) pool.succeed(10_000);
    expect(pool.concurrency).toBe(1);
    // A burst of instant answers does not park the pool below a quarter of its grant.
    for (let i = 0; i < 80; i++) pool.succeed(0.001);
    expect(pool.concurrency).toBeCloseTo(MIN_PACE, 6);
    // A cut applies to the grant, paced the same way: 0.85 x 1 at a quarter.
    now += 1_000;
    pool.fail(slowDown(), 0.001);
    expect(governor.concurrency).toBeCloseTo(0.85, 9);
    expect(pool.concurrency).toBeCloseTo(0.85 * MIN_PACE, 6);
    governor.stop();
  });

  it('paces by an average of its own attempts, throttled ones included, and ignores nonsense durations', () => {
    const pool = fakePool(1);
    let now = 0;
    const governor = new GrantGovernor(pool, pool, 1, { latencyMs: 100, now: () => now });
    // A duration that is no duration changes nothing (no call either).
    pool.succeed(Number.NaN);
    pool.succeed(-1);
    expect(pool.concurrency).toBe(1);
    expect(pool.sets).toBe(0);
    // 40 ms, then 10: the average is 0.8 x 40 + 0.2 x 10 = 34 ms, a pace of 0.34 (not the last one's 0.1).
    now += 40;
    pool.succeed(40);
    expect(pool.concurrency).toBeCloseTo(0.4, 9);
    now += 10;
    pool.succeed(10);
    expect(pool.concurrency).toBeCloseTo(0.34, 9);
    // Refused attempts are attempts: their durations move the pace too, even when they cut nothing (the
    // same round trip as the last cut), and at once.
    now += 1_000;
    pool.fail(slowDown(), 200);
    expect(governor.cuts).toBe(1);
    const afterCut = pool.concurrency;
    pool.fail(slowDown(), 500);
    expect(governor.cuts).toBe(1);
    expect(pool.concurrency).toBeGreaterThan(afterCut);
    // Instant answers count (0 ms is a duration): down to the floor, on the grant they earned back.
    for (let i = 0; i < 40; i++) pool.succeed(0);
    expect(governor.concurrency).toBe(1);
    expect(pool.concurrency).toBeCloseTo(MIN_PACE, 9);
    // Nothing changed: no call.
    const sets = pool.sets;
    pool.succeed(0);
    expect(pool.sets).toBe(sets);
  });

  it('an attempt sent exactly at the last cut counts as sent after it', () => {
    const pool = fakePool(4);
    let now = 1_000;
    const governor = new GrantGovernor(pool, pool, 4, { now: () => now });
    pool.fail(slowDown(), 20);
    // Started at 1,000, the cut's instant: it measured the cut rate, so it cuts (and an accepted one recovers).
    now += 20;
    pool.fail(slowDown(), 20);
    expect(governor.cuts).toBe(2);
    now += 20;
    pool.succeed(20);
    // The second cut of the lease: recovery at half the pace.
    expect(governor.concurrency).toBeCloseTo(4 * 0.85 * 0.85 + 4 / 128 / 2, 9);
  });

  it('each further cut of a lease halves the pace of recovery, so a limit below the grant is not probed again and again', () => {
    const pool = fakePool(4);
    let now = 1_000;
    const governor = new GrantGovernor(pool, pool, 4, { now: () => now });
    const recoveryAfter = (cuts: number) => {
      for (let i = 0; i < cuts; i++) {
        now += 100;
        pool.fail(slowDown(), 20);
      }
      const cut = governor.concurrency;
      now += 100;
      pool.succeed(20);
      return governor.concurrency - cut;
    };
    expect(recoveryAfter(1)).toBeCloseTo(4 / 128, 9);
    expect(recoveryAfter(1)).toBeCloseTo(4 / 256, 9);
    expect(recoveryAfter(2)).toBeCloseTo(4 / 1024, 9);
    expect(governor.cuts).toBe(4);
    governor.stop();
  });

  it('with a real pool and its own clock: one cut per round trip, recovery from completions, silence after stop', async () => {
    const pool = new ExecutorPool({ concurrency: 2, timeout: 0, retries: 0 });
    const governor = new GrantGovernor(pool, pool, 2);
    // Two attempts in flight together, both refused: one round trip, one cut.
    const refused = () =>
      pool.enqueue(async () => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        throw slowDown();
      });
    await Promise.allSettled([refused(), refused()]);
    expect(governor.cuts).toBe(1);
    expect(pool.concurrency).toBeCloseTo(1.7, 9);
    // An accepted attempt sent after the cut takes back 2/128.
    await pool.enqueue(async () => undefined);
    expect(pool.concurrency).toBeCloseTo(1.7 + 2 / 128, 9);
    governor.stop();
    await pool.enqueue(async () => undefined);
    expect(pool.concurrency).toBeCloseTo(1.7 + 2 / 128, 9);
  });

  it('paces by its slot time per write when it counts writes (the fleet latency is per write then)', () => {
    // The fleet's 40 ms is per write: a GET and a PUT of 20 ms each. This holder's attempts also take 20 ms
    // and it reads before every write: it sends exactly the write rate its grant stands for, so no pacing.
    // Per attempt it would look twice as quick as the fleet and run at half its grant.
    const pool = fakePool(2);
    let writes = 0;
    const governor = new GrantGovernor(pool, pool, 2, { latencyMs: 40, writes: () => writes });
    // No write counted yet (the first attempts are reads): nothing to compare, no pacing.
    pool.succeed(20);
    expect(pool.concurrency).toBe(2);
    for (let i = 0; i < 20; i++) {
      writes += 1;
      pool.succeed(20);
      pool.succeed(20);
    }
    expect(pool.concurrency).toBeGreaterThan(1.8);
    // Blind writes (no reads) of 10 ms: twice the rate per slot, so half the grant in flight.
    for (let i = 0; i < 400; i++) {
      writes += 1;
      pool.succeed(10);
    }
    expect(pool.concurrency).toBeLessThan(2 * 0.75);
    expect(pool.concurrency).toBeGreaterThanOrEqual(2 * MIN_PACE);
    expect(governor.concurrency).toBe(2);
    governor.stop();
  });

  it('spaces starts at the rate its grant stands for (permits / fleet latency), cut with it, off at stop', () => {
    const pool = Object.assign(fakePool(2), {
      interval: Number.NaN,
      setStartInterval(ms: number) {
        pool.interval = ms;
      },
    });
    let writes = 0;
    let now = 0;
    const governor = new GrantGovernor(pool, pool, 2, {
      latencyMs: 40,
      writes: () => writes,
      now: () => now,
    });
    // 2 permits at 40 ms per write: 50 writes/s, a write started every 20 ms.
    expect(pool.interval).toBeCloseTo(20, 9);
    // One read per write: the pool spaces only its writes (a Database's reads are unpaced), so the
    // interval is per write whatever the mix: still 20 ms.
    for (let i = 0; i < 10; i++) {
      writes += 1;
      pool.succeed(40);
      pool.succeed(40);
    }
    expect(pool.interval).toBeCloseTo(20, 9);
    // A refused write cuts the rate with the grant: 0.85 x 2 permits, a write every 20 / 0.85 ms.
    now += 1_000;
    writes += 1;
    pool.fail(slowDown(), 40);
    expect(pool.interval).toBeCloseTo(20 / 0.85, 9);
    // Blind writes from then on, and the cut is earned back (20 accepted attempts): every 20 ms again.
    for (let i = 0; i < 100; i++) {
      now += 40;
      writes += 1;
      pool.succeed(40);
    }
    expect(pool.interval).toBeCloseTo(20, 0);
    // Quick answers do not pace its concurrency down: the spacing holds the rate, the grant stays the
    // cap on requests in flight (pacing both ways left it under its rate whenever answers were slow).
    for (let i = 0; i < 40; i++) {
      now += 1;
      writes += 1;
      pool.succeed(1);
    }
    expect(pool.concurrency).toBe(2);
    expect(pool.interval).toBeCloseTo(20, 0);
    governor.stop();
    expect(pool.interval).toBe(0);
  });

  it('without a fleet latency (or with a nonsense one) it never paces', () => {
    for (const latencyMs of [undefined, 0, Number.NaN, -5, Number.POSITIVE_INFINITY]) {
      const pool = fakePool(2);
      new GrantGovernor(pool, pool, 2, latencyMs === undefined ? {} : { latencyMs });
      pool.succeed(500);
      pool.succeed(1);
      expect(pool.concurrency).toBe(2);
    }
  });

  it('a latency of 0 is no fleet latency: a regrant at a usable one does not start pacing the pool', () => {
    const pool = Object.assign(fakePool(2), {
      intervals: [] as number[],
      setStartInterval(ms: number) {
        pool.intervals.push(ms);
      },
    });
    const governor = new GrantGovernor(pool, pool, 2, { latencyMs: 0 });
    governor.regrant(2, 40);
    pool.succeed(10);
    expect(pool.intervals).toEqual([]);
    governor.stop();
  });

  it('steers a real ExecutorPool from the events it emits', async () => {
    const pool = new ExecutorPool({ concurrency: 2, timeout: 0, retries: 0 });
    const governor = new GrantGovernor(pool, pool, 2);
    await expect(
      pool.enqueue(async () => {
        throw slowDown();
      }),
    ).rejects.toMatchObject({ name: 'SlowDown', message: 'Please reduce your request rate.' });
    expect(pool.concurrency).toBeCloseTo(1.7, 9);
    expect(governor.cuts).toBe(1);
    governor.stop();
  });

  it('regrant (a lease that grew): the same share of the new grant as cut, spaced at the new latency', () => {
    const pool = Object.assign(fakePool(4), {
      interval: Number.NaN,
      setStartInterval(ms: number) {
        pool.interval = ms;
      },
    });
    let now = 1_000;
    const governor = new GrantGovernor(pool, pool, 4, { latencyMs: 80, now: () => now });
    // 4 permits at 80 ms: a start every 20 ms.
    expect(pool.interval).toBeCloseTo(20, 9);
    pool.fail(slowDown(), 20);
    now += 100;
    expect(governor.concurrency).toBeCloseTo(3.4, 9);
    // Grown to 8 permits standing for the same rate at 160 ms: still cut to 0.85 of it, still 50 starts/s.
    governor.regrant(8, 160);
    expect(governor.concurrency).toBeCloseTo(6.8, 9);
    expect(pool.concurrency).toBeCloseTo(6.8, 9);
    expect(pool.interval).toBeCloseTo(160 / 6.8, 9);
    // Recovery climbs back to the new grant, not the old one.
    for (let i = 0; i < 200; i++) pool.succeed(20);
    expect(governor.concurrency).toBe(8);
    // A latency it cannot pace by is ignored (the spacing stays at the last usable one).
    for (const unusable of [Number.NaN, Number.POSITIVE_INFINITY, 0, -5, undefined]) {
      governor.regrant(8, unusable);
      expect(pool.interval).toBeCloseTo(20, 9);
    }
    governor.stop();
  });

  it('regrant of a pool that was never paced does not start pacing it; a pool that had 0 permits gets the new grant whole', () => {
    const pool = Object.assign(fakePool(0), {
      interval: Number.NaN,
      setStartInterval(ms: number) {
        pool.interval = ms;
      },
    });
    const governor = new GrantGovernor(pool, pool, 0);
    governor.regrant(3, 150);
    expect(pool.interval).toBeNaN();
    expect(governor.concurrency).toBe(3);
    expect(pool.concurrency).toBe(3);
    governor.stop();
  });
});
