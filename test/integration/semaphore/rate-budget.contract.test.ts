// The RateBudget contract (docs/fleet-cap.md), one suite over both implementations: MemoryRateBudget and
// DynamoRateBudget on dynalite. Clocks are injected; waiters are observed through their backoffs.
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { LeaseReport, RateBudget } from '../../../lib/semaphore/index.js';
import { SemaphoreTimeoutError } from '../../../lib/semaphore/index.js';
import { PROBE_HOLD_MS } from '../../../lib/semaphore/tuning.js';
import {
  type BudgetBackend,
  budgetName,
  dynamoBackend,
  manualClock,
  memoryBackend,
  type StoredBudget,
} from './support/budget.js';
import { type HoldInterval, peakHeld } from './support/timeline.js';

const CLEAN: LeaseReport = { accepted: 100, throttled: 0, starved: false };
const STARVED: LeaseReport = { accepted: 100, throttled: 0, starved: true };
const HALF_REFUSED: LeaseReport = { accepted: 50, throttled: 50, starved: false };
const FAR = 60_000;

describe.each([memoryBackend(), dynamoBackend()])('RateBudget contract: $kind', (backend: BudgetBackend) => {
  beforeAll(() => backend.setup());

  /** A budget of `ceiling` under a fresh name, on a manual clock. */
  const fresh = (label: string, ceiling: number, clock = manualClock()) => {
    const name = budgetName(label);
    const config = { name, ceiling, now: clock.now, random: clock.random };
    return { name, clock, config, budget: backend.budget(config) };
  };
  /** Takes on `b`'s clock: no deadline or lease end within the test unless given. */
  const take = (
    b: { budget: RateBudget; clock: { now(): number } },
    want: number,
    least = 1,
    more: { deadline?: number; signal?: AbortSignal; leaseMs?: number; writes?: number } = {},
  ) =>
    b.budget.take(want, {
      least,
      deadline: more.deadline ?? b.clock.now() + FAR,
      leaseMs: more.leaseMs ?? FAR,
      ...(more.signal === undefined ? {} : { signal: more.signal }),
      ...(more.writes === undefined ? {} : { writes: more.writes }),
    });
  const stored = async (name: string): Promise<StoredBudget> => {
    const item = await backend.stored(name);
    if (item === undefined) throw new Error(`no item for ${name}`);
    return item;
  };

  it('grants min(want, free), clamps a want above the ceiling, and keeps free = budget - held', async () => {
    const b = fresh('grant', 100);
    const first = await take(b, 30);
    const second = await take(b, 100);
    expect([first.rate, second.rate]).toEqual([30, 70]);
    expect(second.expiresAt).toBe(b.clock.now() + FAR);
    const item = await stored(b.name);
    expect(item).toMatchObject({ budget: 100, free: 0, held: 100 });
    expect(item.holders[first.fence]).toEqual({ r: 30, until: first.expiresAt, at: first.takenAt });

    const clamped = fresh('clamped', 100);
    expect((await take(clamped, 500, 80)).rate).toBe(100);
  });

  it('waits while less than least is free, and gets its rate once a holder releases', async () => {
    const b = fresh('wait', 100);
    const holder = await take(b, 80);
    const waiting = take(b, 50, 40);
    await vi.waitFor(() => expect(b.clock.backoffs).toBeGreaterThanOrEqual(2));
    expect((await stored(b.name)).held).toBe(80);
    await holder.release(CLEAN);
    const lease = await waiting;
    expect(lease.rate).toBe(50);
    expect(await stored(b.name)).toMatchObject({ budget: 100, free: 50, held: 50 });
  });

  it('a holder that says how many writes it makes is due when they are done at its rate', async () => {
    const b = fresh('due', 100);
    const holder = await take(b, 80, 1, { writes: 40 });
    expect((await stored(b.name)).holders[holder.fence]).toEqual({
      r: 80,
      until: holder.expiresAt,
      at: holder.takenAt,
      due: holder.takenAt + 500,
    });
  });

  it('a waiter sleeps until the holders in its way are due, instead of polling', async () => {
    const b = fresh('due-wait', 100);
    // 4 writes at 80 per second: due 50 ms after the take, on the budget's clock.
    const holder = await take(b, 80, 1, { writes: 4 });
    let got: number | undefined;
    const waiting = take(b, 50, 40).then((lease) => {
      got = lease.rate;
      return lease;
    });
    // It reads, sleeps to the due time, reads again (the holder is not done on this clock), never jitters.
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(got).toBeUndefined();
    expect(b.clock.backoffs).toBe(0);
    await holder.release(CLEAN);
    expect((await waiting).rate).toBe(50);
  });

  it('a waiter whose deadline comes before the holders are due gives up at once, saying when they will be', async () => {
    const b = fresh('due-early', 100);
    const holder = await take(b, 100, 1, { writes: 1_000 });
    const deadline = b.clock.now() + 1_000;
    const error = await take(b, 10, 10, { deadline }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SemaphoreTimeoutError);
    expect(error).toMatchObject({ deadline, freeAt: holder.takenAt + 10_000 });
    expect(b.clock.backoffs).toBe(0);
    expect(Object.keys((await stored(b.name)).holders)).toEqual([holder.fence]);
  });

  it('a take that times out or is aborted holds nothing', async () => {
    const b = fresh('timeout', 100, manualClock({ backoffStepMs: 150, jitter: 0 }));
    const holder = await take(b, 100);
    const deadline = b.clock.now() + 1_000;
    await expect(take(b, 10, 10, { deadline })).rejects.toMatchObject({
      name: 'SemaphoreTimeoutError',
      semaphore: b.name,
      deadline,
    });
    expect(b.clock.backoffs).toBeGreaterThanOrEqual(6);

    const waiter = fresh('abort', 100);
    const first = await take(waiter, 100);
    const controller = new AbortController();
    const aborted = take(waiter, 10, 10, { signal: controller.signal });
    await vi.waitFor(() => expect(waiter.clock.backoffs).toBeGreaterThanOrEqual(1));
    const reason = new Error('invocation ending');
    controller.abort(reason);
    await expect(aborted).rejects.toBe(reason);
    for (const [name, lease] of [
      [b.name, holder],
      [waiter.name, first],
    ] as const) {
      const item = await stored(name);
      expect(Object.keys(item.holders)).toEqual([lease.fence]);
      expect(item.free).toBe(0);
    }
  });

  it('never grants more than the budget: many concurrent takers, checked on the item and on the timeline', async () => {
    const name = budgetName('contend');
    const ceiling = 10;
    const intervals: HoldInterval[] = [];
    const violations: string[] = [];
    const taker = async (seed: number) => {
      const budget = backend.budget({ name, ceiling });
      for (let cycle = 0; cycle < 5; cycle++) {
        const want = 1 + ((seed * 7 + cycle * 3) % 6);
        const lease = await budget.take(want, { least: 1, deadline: Date.now() + 20_000, leaseMs: FAR });
        const start = performance.now();
        const item = await stored(name);
        if (item.held > item.budget + 1e-9) violations.push(`held ${item.held} > budget ${item.budget}`);
        if (Math.abs(item.free - (item.budget - item.held)) > 1e-9)
          violations.push(`free ${item.free} != ${item.budget} - ${item.held}`);
        for (let turn = 0; turn < (seed + cycle) % 3; turn++) await new Promise((r) => setImmediate(r));
        intervals.push({ start, end: performance.now(), permits: lease.rate });
        await lease.release(CLEAN);
      }
    };
    await Promise.all(Array.from({ length: 8 }, (_, seed) => taker(seed)));
    expect(violations).toEqual([]);
    expect(intervals).toHaveLength(40);
    const { peak } = peakHeld(intervals);
    expect(peak).toBeLessThanOrEqual(ceiling);
    // Contended: some instants saw more than one holder, so the bound above was exercised.
    expect(peakHeld(intervals.map((i) => ({ ...i, permits: 1 }))).peak).toBeGreaterThan(1);
    expect(await stored(name)).toMatchObject({ budget: ceiling, free: ceiling, held: 0 });
  });

  it('a decrease while leases are held makes free negative and blocks takes until holders release', async () => {
    const b = fresh('decrease', 100, manualClock({ backoffStepMs: 100, jitter: 0 }));
    const small = await take(b, 20);
    const large = await take(b, 80);
    b.clock.advance(1);
    await small.release(HALF_REFUSED);
    expect(await stored(b.name)).toMatchObject({ budget: 50, free: -30, held: 80 });
    await expect(take(b, 5, 1, { deadline: b.clock.now() + 500 })).rejects.toBeInstanceOf(
      SemaphoreTimeoutError,
    );
    // Its step was computed from 100: dropped, the rate goes back plainly.
    await large.release(CLEAN);
    expect(await stored(b.name)).toMatchObject({ budget: 50, free: 50, held: 0 });
    expect((await take(b, 80)).rate).toBe(50);
  });

  it('decreases once per round of leases: a lease granted before the last decrease does not decrease again', async () => {
    // Ceiling 64: an increase adds 2.
    const b = fresh('round', 64);
    const first = await take(b, 8);
    const second = await take(b, 8);
    b.clock.advance(10);
    await first.release(HALF_REFUSED);
    const afterDecrease = await stored(b.name);
    expect(afterDecrease).toMatchObject({ budget: 32, decreasedAt: b.clock.now() });
    // Once the probe hold has passed, sixteen starved releases bring it back to the 64 the second lease read.
    b.clock.advance(PROBE_HOLD_MS);
    for (let i = 0; i < 16; i++) {
      b.clock.advance(1);
      await (await take(b, 1)).release(STARVED);
    }
    expect(await stored(b.name)).toMatchObject({ budget: 64, decreasedAt: afterDecrease.decreasedAt });
    await second.release(HALF_REFUSED);
    expect(await stored(b.name)).toMatchObject({ budget: 64, free: 64, held: 0 });
    // A lease granted after that decrease decreases.
    b.clock.advance(1);
    await (await take(b, 8)).release(HALF_REFUSED);
    expect(await stored(b.name)).toMatchObject({ budget: 32, decreasedAt: b.clock.now() });
  });

  it("a budget cut below a taker's least is had whole once nothing holds it (else no release could raise it)", async () => {
    const b = fresh('whole', 100, manualClock({ backoffStepMs: 100, jitter: 0 }));
    for (let i = 0; i < 3; i++) {
      b.clock.advance(1);
      await (await take(b, 10)).release(HALF_REFUSED);
    }
    expect(await stored(b.name)).toMatchObject({ budget: 12.5, free: 12.5 });
    const other = await take(b, 5);
    // 7.5 free of a 12.5 budget: not the whole budget, so a take needing 40 waits.
    await expect(take(b, 60, 40, { deadline: b.clock.now() + 300 })).rejects.toBeInstanceOf(
      SemaphoreTimeoutError,
    );
    await other.release(CLEAN);
    const whole = await take(b, 60, 40);
    expect(whole.rate).toBe(12.5);
    b.clock.advance(PROBE_HOLD_MS);
    await whole.release(STARVED);
    expect(await stored(b.name)).toMatchObject({ budget: 12.5 + 100 / 32, free: 12.5 + 100 / 32 });
  });

  it('holds after a decrease: a starved clean release increases only once PROBE_HOLD_MS have passed', async () => {
    const b = fresh('hold', 100);
    b.clock.advance(1);
    await (await take(b, 10)).release(HALF_REFUSED);
    expect(await stored(b.name)).toMatchObject({ budget: 50 });
    b.clock.advance(PROBE_HOLD_MS - 1);
    await (await take(b, 10)).release(STARVED);
    expect(await stored(b.name)).toMatchObject({ budget: 50 });
    b.clock.advance(1);
    await (await take(b, 10)).release(STARVED);
    expect(await stored(b.name)).toMatchObject({ budget: 50 + 100 / 32 });
  });

  it('drops stale steps: two releases computed from the same budget step it once', async () => {
    const b = fresh('stale', 100);
    b.clock.advance(1);
    await (await take(b, 10)).release(HALF_REFUSED);
    b.clock.advance(PROBE_HOLD_MS);
    const leases = [await take(b, 10), await take(b, 10)];
    await Promise.all(leases.map((lease) => lease.release(STARVED)));
    // One step of 100/32 from 50, not two.
    expect(await stored(b.name)).toMatchObject({ budget: 53.125, free: 53.125, held: 0 });
  });

  it('reclaims expired holders; a late release frees nothing and moves nothing', async () => {
    const b = fresh('expire', 100);
    const late = await take(b, 60, 1, { leaseMs: 1_000 });
    b.clock.advance(1_001);
    const next = await take(b, 100);
    expect(next.rate).toBe(100);
    await late.release(HALF_REFUSED);
    await late.release(HALF_REFUSED);
    const item = await stored(b.name);
    expect(item).toMatchObject({ budget: 100, free: 0, held: 100, decreasedAt: 0 });
    expect(Object.keys(item.holders)).toEqual([next.fence]);
  });

  it('a second release resolves and frees nothing more', async () => {
    const b = fresh('twice', 100);
    const lease = await take(b, 40);
    await lease.release(CLEAN);
    const other = await take(b, 100);
    await expect(lease.release(CLEAN)).resolves.toBeUndefined();
    expect(await stored(b.name)).toMatchObject({ budget: 100, free: 0, held: 100 });
    expect(other.rate).toBe(100);
  });

  it('a restart (a new budget on the same storage) reads the stored budget back', async () => {
    const b = fresh('restart', 100);
    b.clock.advance(1);
    await (await take(b, 10)).release(HALF_REFUSED);
    const restarted = { ...b, budget: backend.budget(b.config) };
    expect((await take(restarted, 100)).rate).toBe(50);
    expect(await stored(b.name)).toMatchObject({ budget: 50, free: 0 });
  });

  it('a process with a lower ceiling grants only what a budget at its ceiling allows, and brings the budget down', async () => {
    const high = fresh('ceiling', 100, manualClock({ backoffStepMs: 100, jitter: 0 }));
    const held = await take(high, 10);
    const low = { ...high, budget: backend.budget({ ...high.config, ceiling: 40 }) };
    const lease = await take(low, 100);
    expect(lease.rate).toBe(30);
    await expect(take(low, 5, 1, { deadline: high.clock.now() + 300 })).rejects.toBeInstanceOf(
      SemaphoreTimeoutError,
    );
    high.clock.advance(1);
    await lease.release(CLEAN);
    expect(await stored(high.name)).toMatchObject({ budget: 40, free: 30, held: 10 });
    await held.release(CLEAN);
    expect(await stored(high.name)).toMatchObject({ budget: 40, free: 40, held: 0 });
  });
});
