// DynamoRateBudget at its seams with DynamoDB: errors other than "condition failed", a take whose answer is
// lost, a signal that aborts at the worst moment, a stalled DynamoDB, a missing table, many expired holders.
// What a rejected take holds is read straight from the table.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DynamoRateBudget, type LeaseReport } from '../../../lib/semaphore/index.js';
import { localAwsEndpoints, localClientConfig } from '../../support/local-aws.js';
import { budgetName, dynamoBackend, manualClock } from './support/budget.js';
import { type DynamoCall, type Faults, faultInjecting, throttled } from './support/fault-injecting-client.js';
import { type StallingProxy, startStallingProxy } from './support/stalling-proxy.js';

const backend = dynamoBackend();
const cleanups: (() => Promise<void> | void)[] = [];
beforeAll(() => backend.setup());
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const CLEAN: LeaseReport = { accepted: 100, throttled: 0, starved: false };
const FAR = 60_000;

/** What a request of the budget is, from its command and expressions (lib/semaphore/budget-item.ts). */
function requestOf(call: DynamoCall): 'read' | 'create' | 'take' | 'step' | 'release' | 'reclaim' {
  if (call.command === 'GetItemCommand') return 'read';
  if (call.command === 'PutItemCommand') return 'create';
  const update = call.input.UpdateExpression ?? '';
  if (update.startsWith('SET #holders.#f =')) return 'take';
  if (update.includes(':freed, #budget')) return 'step';
  if (update.startsWith('REMOVE #holders.#f ')) return 'release';
  return 'reclaim';
}

/** A budget whose client fails or observes requests as `faults` says; `calls` lists what it sent. */
function faulty(faults: Faults, ceiling = 100, clock = manualClock()) {
  const { client, calls } = faultInjecting(backend.client(), faults);
  const name = budgetName('faults');
  const budget = new DynamoRateBudget({
    client,
    tableName: backend.tableName(),
    name,
    ceiling,
    now: clock.now,
    random: clock.random,
    giveBackTimeoutMs: 300,
  });
  const kinds = () => calls.map(requestOf);
  return { budget, name, clock, kinds };
}

const options = (clock: { now(): number }, more: { signal?: AbortSignal; deadline?: number } = {}) => ({
  least: 1,
  deadline: more.deadline ?? clock.now() + FAR,
  leaseMs: FAR,
  ...(more.signal === undefined ? {} : { signal: more.signal }),
});

async function expectNothingHeld(name: string, ceiling = 100) {
  expect(await backend.stored(name)).toMatchObject({ budget: ceiling, free: ceiling, held: 0, holders: {} });
}

describe('DynamoRateBudget: a take', () => {
  it('whose answer is lost after its write landed gives the rate back, then rejects with the error', async () => {
    const lost = new Error('socket hang up');
    const { budget, name, clock, kinds } = faulty({
      after: (call) => {
        if (requestOf(call) === 'take') throw lost;
      },
    });
    await expect(budget.take(40, options(clock))).rejects.toBe(lost);
    expect(kinds()).toEqual(['read', 'create', 'read', 'take', 'release']);
    await expectNothingHeld(name);
  });

  it('whose write landed but was answered "condition failed" (the SDK retried it after a lost answer) holds its own entry: the lease is its, at once', async () => {
    // The first attempt's answer is lost after the write applied; the SDK's retry of the same write then
    // fails its condition (the entry exists). A taker that read that as "lost the race" kept retrying
    // until its deadline against its own entry, then rejected while the entry held 40 until its lease end.
    let retried = false;
    const { budget, name, clock, kinds } = faulty({
      after: (call) => {
        if (retried || requestOf(call) !== 'take') return;
        retried = true;
        throw Object.assign(new Error('The conditional request failed'), {
          name: 'ConditionalCheckFailedException',
        });
      },
    });
    const lease = await budget.take(40, { least: 1, deadline: clock.now(), leaseMs: FAR });
    expect(lease.rate).toBe(40);
    expect(Object.keys((await backend.stored(name))!.holders)).toEqual([lease.fence]);
    await lease.release(CLEAN);
    expect(kinds().filter((k) => k === 'take')).toHaveLength(1);
    await expectNothingHeld(name);
  });

  it('whose write is throttled rejects with that error at once (not a timeout) and holds nothing', async () => {
    const { budget, name, clock, kinds } = faulty({
      before: (call) => {
        if (requestOf(call) === 'take') throw throttled();
      },
    });
    await expect(budget.take(40, options(clock))).rejects.toMatchObject({
      name: 'ProvisionedThroughputExceededException',
    });
    expect(kinds().filter((k) => k === 'take')).toHaveLength(1);
    await expectNothingHeld(name);
  });

  it('whose signal aborts as its write is answered gives the rate back and rejects with the reason', async () => {
    const controller = new AbortController();
    const reason = new Error('invocation ending');
    const { budget, name, clock, kinds } = faulty({
      after: (call) => {
        if (requestOf(call) === 'take') controller.abort(reason);
      },
    });
    await expect(budget.take(40, options(clock, { signal: controller.signal }))).rejects.toBe(reason);
    expect(kinds().at(-1)).toBe('release');
    await expectNothingHeld(name);
  });

  it('whose answer and give-back are both lost leaves an entry the next reader reclaims once it expires', async () => {
    const clock = manualClock();
    let failing = true;
    const { budget, name } = faulty(
      {
        after: (call) => {
          if (failing && requestOf(call) === 'take') throw new Error('socket hang up');
        },
        before: (call) => {
          if (failing && requestOf(call) === 'release') throw new Error('connection reset');
        },
      },
      100,
      clock,
    );
    await expect(budget.take(100, { least: 1, deadline: clock.now(), leaseMs: 1_000 })).rejects.toMatchObject(
      {
        message: 'socket hang up',
      },
    );
    expect(await backend.stored(name)).toMatchObject({ free: 0, held: 100 });
    failing = false;
    clock.advance(1_001);
    expect((await budget.take(100, options(clock))).rate).toBe(100);
    expect(Object.keys((await backend.stored(name))!.holders)).toHaveLength(1);
  });

  it('reclaims at most 25 expired holders per write; the next reader takes the rest', async () => {
    const clock = manualClock();
    const { budget, name, kinds } = faulty({}, 30, clock);
    for (let i = 0; i < 30; i++) await budget.take(1, { least: 1, deadline: clock.now(), leaseMs: 1_000 });
    clock.advance(1_001);
    const first = await budget.take(30, options(clock));
    expect(first.rate).toBe(25);
    expect(kinds().filter((k) => k === 'reclaim')).toHaveLength(1);
    expect(await backend.stored(name)).toMatchObject({ free: 0, held: 30 });
    await first.release(CLEAN);
    expect((await budget.take(30, options(clock))).rate).toBe(30);
    expect(Object.keys((await backend.stored(name))!.holders)).toHaveLength(1);
  });

  it('on a table that does not exist rejects with SemaphoreTableNotFoundError', async () => {
    const clock = manualClock();
    const budget = new DynamoRateBudget({
      client: backend.client(),
      tableName: 'no-such-table',
      name: budgetName('missing'),
      ceiling: 100,
    });
    await expect(budget.take(10, options(clock))).rejects.toMatchObject({
      name: 'SemaphoreTableNotFoundError',
      tableName: 'no-such-table',
    });
  });
});

describe('DynamoRateBudget: a release', () => {
  it('whose step write fails with another error than a condition rejects with it, and can be retried', async () => {
    let fail = true;
    const { budget, name, clock, kinds } = faulty({
      before: (call) => {
        if (fail && requestOf(call) === 'step') throw throttled();
      },
    });
    clock.advance(1);
    const lease = await budget.take(10, options(clock));
    const overloaded = { accepted: 50, throttled: 50, starved: false };
    await expect(lease.release(overloaded)).rejects.toMatchObject({
      name: 'ProvisionedThroughputExceededException',
    });
    expect(kinds().at(-1)).toBe('step');
    fail = false;
    await lease.release(overloaded);
    expect(await backend.stored(name)).toMatchObject({ budget: 50, free: 50, held: 0 });
  });

  it('sends nothing the second time', async () => {
    const { budget, clock, kinds } = faulty({});
    const lease = await budget.take(10, options(clock));
    await lease.release(CLEAN);
    const sent = kinds().length;
    await lease.release(CLEAN);
    await lease.release({ accepted: 0, throttled: 10, starved: false });
    expect(kinds()).toHaveLength(sent);
    expect(kinds().at(-1)).toBe('release');
  });
});

describe('DynamoRateBudget against a stalled DynamoDB', () => {
  /** A budget whose requests go through a proxy that never answers those `stall(body)` selects. */
  async function stalling(stall: (body: string) => boolean) {
    const proxy: StallingProxy = await startStallingProxy({ target: localAwsEndpoints().dynamodb, stall });
    const client = new DynamoDBClient({
      ...localClientConfig('dynamodb'),
      endpoint: proxy.endpoint,
      maxAttempts: 1,
    });
    cleanups.push(
      () => proxy.close(),
      () => client.destroy(),
    );
    const clock = manualClock();
    const name = budgetName('stall');
    const budget = new DynamoRateBudget({
      client,
      tableName: backend.tableName(),
      name,
      ceiling: 100,
      now: clock.now,
      random: clock.random,
      giveBackTimeoutMs: 200,
    });
    return { budget, name, clock, proxy };
  }
  const isRead = (body: string) => body.includes('"ConsistentRead":true');
  const isTake = (body: string) => body.includes('SET #holders.#f =');
  const isRelease = (body: string) => body.includes('REMOVE #holders.#f');

  for (const [what, stall] of [
    ['read', isRead],
    ['write', isTake],
  ] as const) {
    it(`a take whose ${what} stalls rejects with its signal's reason and holds nothing`, async () => {
      const { budget, name, clock, proxy } = await stalling(stall);
      const controller = new AbortController();
      const taking = budget.take(10, options(clock, { signal: controller.signal }));
      await proxy.nextStall();
      const reason = new Error('take budget spent');
      controller.abort(reason);
      await expect(taking).rejects.toBe(reason);
      expect((await backend.stored(name))?.held ?? 0).toBe(0);
    });
  }

  it("a release whose write stalls rejects with its signal's reason; without one, with a TimeoutError", async () => {
    const { budget, clock, proxy } = await stalling(isRelease);
    const lease = await budget.take(10, options(clock));
    const controller = new AbortController();
    const releasing = lease.release(CLEAN, { signal: controller.signal });
    await proxy.nextStall();
    const reason = new Error('release budget spent');
    controller.abort(reason);
    await expect(releasing).rejects.toBe(reason);
    const started = performance.now();
    await expect(lease.release(CLEAN)).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
    expect(proxy.stalledCount).toBe(2);
  });
});
