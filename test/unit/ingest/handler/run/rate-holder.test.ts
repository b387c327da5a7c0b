import { describe, expect, it } from 'vitest';
import { runUnderRate } from '../../../../../lib/ingest/handler/run/rate-holder.js';
import { ExecutorPool } from '../../../../../lib/pool/executor-pool.js';
import { SemaphoreTimeoutError } from '../../../../../lib/semaphore/errors.js';
import type {
  LeaseReport,
  RateBudget,
  RateLease,
  TakeOptions,
} from '../../../../../lib/semaphore/rate-types.js';

const slowDown = () => Object.assign(new Error('Please reduce your request rate.'), { name: 'SlowDown' });

/** A budget that grants `grant` (or fails with `fail`) and keeps what it was asked and told. */
function recordingBudget(grant: number, fail?: unknown, takenAt = 0) {
  const takes: Array<{ want: number; options: TakeOptions }> = [];
  const reports: LeaseReport[] = [];
  let releaseError: unknown;
  const budget: RateBudget = {
    name: 'prefix:b/t=acme/',
    ceiling: 100,
    take: async (want, options) => {
      takes.push({ want, options });
      if (fail !== undefined) throw fail;
      const lease: RateLease = {
        rate: Math.min(want, grant),
        fence: 'lease-1',
        takenAt,
        expiresAt: Number.MAX_SAFE_INTEGER,
        release: async (report) => {
          reports.push(report);
          if (releaseError !== undefined) throw releaseError;
        },
      };
      return lease;
    },
  };
  return {
    budget,
    takes,
    reports,
    failRelease: (e: unknown) => {
      releaseError = e;
    },
  };
}

const window = (deadline: number, signal = new AbortController().signal) => ({
  deadline,
  signal,
  leaseMs: 10_000,
  releaseTimeoutMs: 500,
});

function pool() {
  return new ExecutorPool({ concurrency: 1, retries: 3, retryDelay: 1, maxRetryDelay: 1 });
}

/** 40 writes' holder whose work does nothing, at time 0 with 10 s left. */
function runIdle(budget: RateBudget) {
  return runUnderRate(
    budget,
    { pool: pool(), writes: 40, inFlight: 4 },
    window(10_000),
    undefined,
    async () => {},
    () => 0,
  );
}

describe('runUnderRate', () => {
  it('asks for the whole ceiling, and at least the rate that finishes its writes after its wait', async () => {
    const { budget, takes } = recordingBudget(100);
    const p = pool();
    await runUnderRate(
      budget,
      { pool: p, writes: 40, inFlight: 8 },
      window(10_000),
      undefined,
      async () => {},
      () => 0,
    );
    expect(takes).toHaveLength(1);
    expect(takes[0]!.want).toBe(100);
    // 40 writes in the 5 s that remain after waiting at most half of the 10 s left.
    expect(takes[0]!.options.least).toBeCloseTo(8, 10);
    expect(takes[0]!.options.deadline).toBe(5_000);
    expect(takes[0]!.options.leaseMs).toBe(10_000);
  });

  it('asks no more than the ceiling, and waits no longer than its turn wait', async () => {
    const { budget, takes } = recordingBudget(100);
    await runUnderRate(
      budget,
      { pool: pool(), writes: 500, inFlight: 8, maxWaitMs: 300 },
      window(10_000),
      undefined,
      async () => {},
      () => 0,
    );
    expect(takes[0]!.want).toBe(100);
    // 500 writes in the 9.7 s left after a 300 ms wait.
    expect(takes[0]!.options.least).toBeCloseTo(500 / 9.7, 10);
    expect(takes[0]!.options.deadline).toBe(300);
  });

  it('asks no more than its pool delivered last time plus one increase step, but what it needs to finish', async () => {
    const capped = recordingBudget(100);
    await runUnderRate(
      capped.budget,
      { pool: pool(), writes: 40, inFlight: 8, delivered: 10 },
      window(10_000),
      undefined,
      async () => {},
      () => 0,
    );
    // 10 delivered + 100 / 32: under the 40 its writes would ask for in a second.
    expect(capped.takes[0]!.want).toBeCloseTo(10 + 100 / 32, 10);
    const needy = recordingBudget(100);
    await runUnderRate(
      needy.budget,
      { pool: pool(), writes: 40, inFlight: 8, delivered: 1 },
      window(10_000),
      undefined,
      async () => {},
      () => 0,
    );
    // 40 writes in the 5 s after its wait need 8 per second, more than 1 + 100 / 32.
    expect(needy.takes[0]!.want).toBeCloseTo(8, 10);
    expect(needy.takes[0]!.options.least).toBeCloseTo(8, 10);
  });

  it('says what it delivered: writes sent over the time from its grant to its drain', async () => {
    const { budget } = recordingBudget(100);
    const counted = { count: 0, stop: () => {} };
    let t = 0;
    const result = await runUnderRate(
      budget,
      { pool: pool(), writes: 20, inFlight: 4 },
      window(10_000),
      counted,
      async () => {
        counted.count = 20;
        t = 2_000;
      },
      () => t,
    );
    expect(result).toMatchObject({ rate: 100, delivered: 10 });
  });

  it('paces the pool at the grant and sizes its concurrency to the in-flight bound', async () => {
    const { budget } = recordingBudget(20);
    const p = pool();
    let seen: { interval: number; concurrency: number } | undefined;
    const result = await runUnderRate(
      budget,
      { pool: p, writes: 40, inFlight: 8 },
      window(10_000),
      undefined,
      async () => {
        seen = { interval: p.startInterval, concurrency: p.concurrency };
      },
    );
    expect(seen).toEqual({ interval: 50, concurrency: 8 });
    expect(result).toMatchObject({ rate: 20 });
    expect('releaseError' in result).toBe(false);
  });

  it('reports what the lease saw: accepted and refused writes, starved when granted less than it wanted', async () => {
    const { budget, reports } = recordingBudget(20);
    const p = pool();
    const counted = { count: 0, stop: () => {} };
    await runUnderRate(
      budget,
      { pool: p, writes: 40, inFlight: 4 },
      window(Date.now() + 10_000),
      counted,
      async () => {
        p.setStartInterval(0);
        const refusals = [slowDown(), slowDown()];
        await Promise.all(
          Array.from({ length: 6 }, (_, i) =>
            p.enqueue(async () => {
              counted.count++;
              const refusal = i < 2 ? refusals.shift() : undefined;
              if (refusal !== undefined) throw refusal;
            }),
          ),
        );
      },
    );
    expect(reports).toHaveLength(1);
    const report = reports[0]!;
    expect(report.throttled).toBe(2);
    expect(report.accepted).toBe(6);
    expect(report.starved).toBe(true);
  });

  it('is not starved when granted all it asked for, without waiting', async () => {
    const { budget, reports } = recordingBudget(100);
    await runIdle(budget);
    expect(reports[0]).toEqual({ accepted: 0, throttled: 0, starved: false });
  });

  it('is starved only when granted less than it asked: a grant stamped after the take began is not a wait', async () => {
    // Every grant is stamped after the take's read, so a later takenAt says nothing about scarcity.
    const whole = recordingBudget(100, undefined, 5);
    await runIdle(whole.budget);
    expect(whole.reports[0]!.starved).toBe(false);
    const part = recordingBudget(60, undefined, 5);
    await runIdle(part.budget);
    expect(part.reports[0]!.starved).toBe(true);
  });

  it('is out of turn when the budget times out, and runs nothing', async () => {
    const timeout = new SemaphoreTimeoutError('prefix:b/t=acme/', 8, 5_000);
    const { budget } = recordingBudget(100, timeout);
    let ran = false;
    const result = await runUnderRate(
      budget,
      { pool: pool(), writes: 40, inFlight: 4 },
      window(10_000),
      undefined,
      async () => {
        ran = true;
      },
    );
    expect(result).toEqual({ unavailable: timeout, outOfTurn: true });
    expect(ran).toBe(false);
  });

  it('is unavailable (not out of turn) when the store fails, and a timeout after the cutoff is the cutoff', async () => {
    const failure = Object.assign(new Error('connect ECONNREFUSED'), { name: 'Error' });
    const failing = recordingBudget(100, failure);
    expect(
      await runUnderRate(
        failing.budget,
        { pool: pool(), writes: 40, inFlight: 4 },
        window(10_000),
        undefined,
        async () => {},
      ),
    ).toEqual({ unavailable: failure });
    const aborted = new AbortController();
    aborted.abort(new Error('cutoff'));
    const cut = recordingBudget(100, aborted.signal.reason);
    const result = await runUnderRate(
      cut.budget,
      { pool: pool(), writes: 40, inFlight: 4 },
      window(10_000, aborted.signal),
      undefined,
      async () => {},
    );
    expect(result).toMatchObject({ unavailable: { name: 'SemaphoreTimeoutError' } });
    expect('outOfTurn' in result).toBe(false);
  });

  it('keeps the writes when the release fails, and says so', async () => {
    const recording = recordingBudget(100);
    const lost = new Error('release lost');
    recording.failRelease(lost);
    const result = await runUnderRate(
      recording.budget,
      { pool: pool(), writes: 4, inFlight: 4 },
      window(10_000),
      undefined,
      async () => {},
      () => 0,
    );
    expect(result).toMatchObject({ rate: 100, releaseError: lost });
  });

  it('releases when the work throws, and the error goes on', async () => {
    const recording = recordingBudget(100);
    const broken = new TypeError('work broke');
    await expect(
      runUnderRate(
        recording.budget,
        { pool: pool(), writes: 4, inFlight: 4 },
        window(10_000),
        undefined,
        async () => {
          throw broken;
        },
      ),
    ).rejects.toBe(broken);
    expect(recording.reports).toHaveLength(1);
  });
});
