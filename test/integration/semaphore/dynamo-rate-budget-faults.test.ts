// DynamoRateBudget at its seams with DynamoDB: errors and throttles on the read and on the write, a write
// whose answer is lost (the SDK's retry then fails its condition, and `by` says the write landed; or the call
// fails while the booking stands: its slots pass unused), a lost race, aborts at the worst moment, a stalled
// DynamoDB, a missing table. What a call left behind is read straight from the table.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DynamoRateBudget, type RateBudget, type WriteRound } from '../../../lib/semaphore/index.js';
import { localAwsEndpoints, localClientConfig } from '../../support/local-aws.js';
import { budgetName, dynamoBackend, manualClock, overlapping, peakSlots, slotsOf } from './support/budget.js';
import {
  type DynamoCall,
  type Faults,
  faultInjecting,
  refused,
  throttled,
} from './support/fault-injecting-client.js';
import { type StallingProxy, startStallingProxy } from './support/stalling-proxy.js';

const backend = dynamoBackend();
const cleanups: (() => Promise<void> | void)[] = [];
beforeAll(() => backend.setup());
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const CLEAN: WriteRound = { accepted: 100, throttled: 0, starved: false };
const HALF_REFUSED: WriteRound = { accepted: 50, throttled: 50, starved: false };
const FAR = 600_000;

/** What a request of the budget is (lib/semaphore/budget-item.ts): a booking's and a step's write look alike. */
const requestOf = (call: DynamoCall): 'read' | 'create' | 'write' =>
  call.command === 'GetItemCommand' ? 'read' : call.command === 'PutItemCommand' ? 'create' : 'write';

const conditionFailed = () =>
  Object.assign(new Error('The conditional request failed'), { name: 'ConditionalCheckFailedException' });

type Clock = ReturnType<typeof manualClock>;

/** A budget of ceiling 100 over `client`, on `clock`; reports without a signal are bounded at 200 ms. */
const budgetOn = (client: DynamoDBClient, clock: Clock, name: string) =>
  new DynamoRateBudget({
    client,
    tableName: backend.tableName(),
    name,
    ceiling: 100,
    now: clock.now,
    random: clock.random,
    reportTimeoutMs: 200,
  });

/** A budget whose client fails or observes requests as `faults` says; `kinds()` lists what it sent. */
function faulty(faults: Faults, clock: Clock = manualClock(), name = budgetName('faults')) {
  const { client, calls } = faultInjecting(backend.client(), faults);
  const kinds = () => calls.map(requestOf);
  return { budget: budgetOn(client, clock, name), name, clock, kinds };
}

/** A fault on the `nth` request of kind `kind` only (1-based). */
const onNth = <R>(kind: ReturnType<typeof requestOf>, nth: number, act: () => R) => {
  let seen = 0;
  return (call: DynamoCall): R | undefined =>
    requestOf(call) === kind && ++seen === nth ? act() : undefined;
};

const book = (
  b: { budget: RateBudget; clock: { now(): number } },
  writes: number,
  more: { signal?: AbortSignal; latestStart?: number } = {},
) =>
  b.budget.book({
    writes,
    latestStart: more.latestStart ?? b.clock.now() + FAR,
    writeBy: b.clock.now() + FAR,
    ...(more.signal === undefined ? {} : { signal: more.signal }),
  });

describe('DynamoRateBudget: a booking', () => {
  for (const [what, error, name] of [
    ['throttled', throttled, 'ProvisionedThroughputExceededException'],
    ['refused', refused, 'ValidationException'],
  ] as const) {
    it(`whose read is ${what} rejects with that error and writes nothing`, async () => {
      const b = faulty({
        before: (call) => {
          if (requestOf(call) === 'read') throw error();
        },
      });
      await expect(book(b, 10)).rejects.toMatchObject({ name });
      expect(b.kinds()).toEqual(['read']);
      expect(await backend.stored(b.name)).toBeUndefined();
    });

    it(`whose write is ${what} rejects with that error at once (no retry, no timeout) and books nothing`, async () => {
      const b = faulty({
        before: (call) => {
          if (requestOf(call) === 'write') throw error();
        },
      });
      await expect(book(b, 10)).rejects.toMatchObject({ name });
      expect(b.kinds()).toEqual(['read', 'create', 'read', 'write']);
      expect(await backend.stored(b.name)).toMatchObject({ version: 0, freeAt: 0 });
      expect(b.clock.backoffs).toBe(0);
    });
  }

  it('whose call fails after its write landed rejects; the booking stands, its slots pass unused and the next booking comes after them', async () => {
    const lost = new Error('socket hang up');
    const b = faulty({
      after: onNth('write', 1, () => {
        throw lost;
      }),
    });
    const t0 = b.clock.now();
    await expect(book(b, 40)).rejects.toBe(lost);
    expect(await backend.stored(b.name)).toMatchObject({ version: 1, freeAt: t0 + 400 });
    const next = await book(b, 40);
    expect(next).toMatchObject({ startAt: t0 + 400, endsAt: t0 + 800 });
    // Had the lost booking's holder written after all, its slots and the next one's would still not meet.
    const standing = { rate: 100, startAt: t0, endsAt: t0 + 400, writes: 40 };
    expect(overlapping([standing, next])).toEqual([]);
    expect(peakSlots([standing, next].flatMap(slotsOf))).toBeLessThanOrEqual(100);
  });

  it('whose write landed but was answered "condition failed" (the retry after a lost answer) is its own, at once', async () => {
    const b = faulty({
      after: onNth('write', 1, () => {
        throw conditionFailed();
      }),
    });
    const t0 = b.clock.now();
    const booking = await book(b, 40);
    expect(booking).toMatchObject({ startAt: t0, endsAt: t0 + 400, writes: 40 });
    // One write, then the read that found it by its id: no second booking, no backoff.
    expect(b.kinds()).toEqual(['read', 'create', 'read', 'write', 'read']);
    expect(b.clock.backoffs).toBe(0);
    expect(await backend.stored(b.name)).toMatchObject({ version: 1, freeAt: t0 + 400 });
  });

  it('that loses a race to another booking reads again after a backoff and books after it', async () => {
    const name = budgetName('race');
    const clock = manualClock();
    const rival = backend.budget({ name, ceiling: 100, now: clock.now, random: clock.random });
    let theirs: unknown;
    // The rival's booking lands while this one's write is on its way.
    const landRival = async () => {
      theirs = await book({ budget: rival, clock }, 30);
    };
    const b = faulty({ before: onNth('write', 1, landRival) }, clock, name);
    const t0 = clock.now();
    const mine = await book(b, 10);
    expect(clock.backoffs).toBe(1);
    expect(theirs).toMatchObject({ startAt: t0, endsAt: t0 + 300 });
    expect(mine).toMatchObject({ startAt: t0 + 300, endsAt: t0 + 400 });
    expect(b.kinds()).toEqual(['read', 'create', 'read', 'write', 'read', 'read', 'write']);
    expect(await backend.stored(name)).toMatchObject({ version: 2, freeAt: t0 + 400 });
  });

  it('whose signal aborts as its write is answered resolves with the booking: it stands, and nothing is held to give back', async () => {
    const controller = new AbortController();
    const b = faulty({ after: onNth('write', 1, () => controller.abort(new Error('invocation ending'))) });
    const t0 = b.clock.now();
    const booking = await book(b, 10, { signal: controller.signal });
    expect(booking).toMatchObject({ startAt: t0, endsAt: t0 + 100 });
    expect(await backend.stored(b.name)).toMatchObject({ version: 1, freeAt: t0 + 100 });
  });

  it('whose signal aborts while it backs off after a lost race rejects with the reason, booking nothing', async () => {
    const controller = new AbortController();
    const reason = new Error('invocation ending');
    const clock = manualClock();
    const b = faulty(
      {
        before: onNth('write', 1, () => {
          throw conditionFailed();
        }),
      },
      {
        ...clock,
        random: () => {
          controller.abort(reason);
          return 0.5;
        },
      },
    );
    await expect(book(b, 10, { signal: controller.signal })).rejects.toBe(reason);
    expect(b.kinds()).toEqual(['read', 'create', 'read', 'write', 'read']);
    expect(await backend.stored(b.name)).toMatchObject({ version: 0 });
  });

  it('that lost a race and finds the schedule booked past its latest start rejects with SemaphoreTimeoutError', async () => {
    const name = budgetName('race-late');
    const clock = manualClock();
    const rival = backend.budget({ name, ceiling: 100, now: clock.now, random: clock.random });
    const landRival = async () => {
      await book({ budget: rival, clock }, 500);
    };
    const b = faulty({ before: onNth('write', 1, landRival) }, clock, name);
    const t0 = clock.now();
    const latestStart = t0 + 1_000;
    await expect(book(b, 10, { latestStart })).rejects.toMatchObject({
      name: 'SemaphoreTimeoutError',
      deadline: latestStart,
      freeAt: t0 + 5_000,
    });
    expect(await backend.stored(name)).toMatchObject({ version: 1, freeAt: t0 + 5_000 });
  });

  it('on a table that does not exist rejects with SemaphoreTableNotFoundError', async () => {
    const budget = new DynamoRateBudget({
      client: backend.client(),
      tableName: 'no-such-table',
      name: budgetName('missing'),
      ceiling: 100,
    });
    await expect(book({ budget, clock: { now: Date.now } }, 10)).rejects.toMatchObject({
      name: 'SemaphoreTableNotFoundError',
      tableName: 'no-such-table',
      cause: expect.objectContaining({ name: 'ResourceNotFoundException' }),
    });
  });
});

describe('DynamoRateBudget: a step', () => {
  it('whose write is throttled rejects with that error; the report can be made again, and steps once', async () => {
    let fail = true;
    const b = faulty({
      before: (call) => {
        if (fail && requestOf(call) === 'write' && b.kinds().filter((k) => k === 'write').length > 1)
          throw throttled();
      },
    });
    const booking = await book(b, 10);
    b.clock.advance(1);
    await expect(booking.report(HALF_REFUSED)).rejects.toMatchObject({
      name: 'ProvisionedThroughputExceededException',
    });
    expect(await backend.stored(b.name)).toMatchObject({ rate: 100, version: 1 });
    fail = false;
    await booking.report(HALF_REFUSED);
    expect(await backend.stored(b.name)).toMatchObject({ rate: 50, version: 2 });
  });

  it('whose read is throttled rejects with that error and writes nothing', async () => {
    const b = faulty({
      before: onNth('read', 3, () => {
        throw throttled();
      }),
    });
    const booking = await book(b, 10);
    b.clock.advance(1);
    await expect(booking.step(HALF_REFUSED)).rejects.toMatchObject({
      name: 'ProvisionedThroughputExceededException',
    });
    expect(await backend.stored(b.name)).toMatchObject({ rate: 100, version: 1 });
  });

  it('whose write landed but was answered "condition failed" resolves with the new rate, having stepped once', async () => {
    const b = faulty({
      after: onNth('write', 2, () => {
        throw conditionFailed();
      }),
    });
    const booking = await book(b, 10);
    b.clock.advance(1);
    await expect(booking.step(HALF_REFUSED)).resolves.toEqual({ rate: 50, decreasedAt: b.clock.now() });
    expect(b.kinds().filter((k) => k === 'write')).toHaveLength(2);
    expect(await backend.stored(b.name)).toMatchObject({ rate: 50, version: 2 });
  });

  it('whose call fails after its write landed rejects; a report made again does not step twice', async () => {
    const lost = new Error('socket hang up');
    const b = faulty({
      after: onNth('write', 2, () => {
        throw lost;
      }),
    });
    const booking = await book(b, 10);
    b.clock.advance(1);
    await expect(booking.report(HALF_REFUSED)).rejects.toBe(lost);
    b.clock.advance(1);
    await booking.report(HALF_REFUSED);
    expect(await backend.stored(b.name)).toMatchObject({ rate: 50, version: 2 });
    expect(b.kinds().filter((k) => k === 'write')).toHaveLength(2);
  });

  it('a report the law holds the rate for sends nothing; a step reads where the schedule stands', async () => {
    const b = faulty({});
    const booking = await book(b, 10);
    const sent = b.kinds().length;
    await booking.report(CLEAN);
    expect(b.kinds().slice(sent)).toEqual([]);
    await expect(booking.step(CLEAN)).resolves.toEqual({ rate: 100, decreasedAt: 0 });
    expect(b.kinds().slice(sent)).toEqual(['read']);
  });
});

const isRead = (body: string) => body.includes('"ConsistentRead":true');
const isWrite = (body: string) => body.includes('"ConditionExpression":"#version = :read"');

/**
 * A budget whose requests go through a proxy in front of dynalite (`stall` never answers, `lose` drops the
 * answer once the write has applied), with an SDK client that makes `maxAttempts`.
 */
async function throughProxy(
  faults: { stall?: (body: string) => boolean; lose?: (body: string) => boolean },
  maxAttempts: number,
) {
  const proxy: StallingProxy = await startStallingProxy({
    target: localAwsEndpoints().dynamodb,
    stall: () => false,
    ...faults,
  });
  const client = new DynamoDBClient({
    ...localClientConfig('dynamodb'),
    endpoint: proxy.endpoint,
    maxAttempts,
  });
  cleanups.push(
    () => proxy.close(),
    () => client.destroy(),
  );
  const clock = manualClock();
  const name = budgetName('proxied');
  return { budget: budgetOn(client, clock, name), name, clock, proxy };
}

describe('DynamoRateBudget: a write whose answer the network loses (the SDK retries it)', () => {
  it('a booking: the retry fails its condition, and the booking is known as its own by `by`', async () => {
    let lost = 0;
    // The first write's answer is dropped after DynamoDB applied it; the SDK's retry finds its condition failed.
    const b = await throughProxy({ lose: (body) => isWrite(body) && lost++ === 0 }, 3);
    const t0 = b.clock.now();
    const booking = await book(b, 40);
    expect(lost).toBeGreaterThanOrEqual(2);
    expect(booking).toMatchObject({ startAt: t0, endsAt: t0 + 400 });
    expect(b.clock.backoffs).toBe(0);
    expect(await backend.stored(b.name)).toMatchObject({ version: 1, freeAt: t0 + 400 });
  });
});

describe('DynamoRateBudget against a stalled DynamoDB', () => {
  /** A budget whose requests go through a proxy that never answers those `stall(body)` selects. */
  const stalling = (stall: (body: string) => boolean) => throughProxy({ stall }, 1);

  for (const [what, stall] of [
    ['read', isRead],
    ['write', isWrite],
  ] as const) {
    it(`a booking whose ${what} stalls rejects with its signal's reason and books nothing`, async () => {
      const b = await stalling(stall);
      const controller = new AbortController();
      const booking = book(b, 10, { signal: controller.signal });
      await b.proxy.nextStall();
      const reason = new Error('booking budget spent');
      controller.abort(reason);
      await expect(booking).rejects.toBe(reason);
      expect((await backend.stored(b.name))?.version ?? 0).toBe(0);
    });

    it(`a booking without a signal whose ${what} stalls rejects with a TimeoutError at writeBy, when no slot is of use`, async () => {
      const b = await stalling(stall);
      const started = performance.now();
      const booking = b.budget.book({
        writes: 10,
        latestStart: b.clock.now() + 250,
        writeBy: b.clock.now() + 250,
      });
      await expect(booking).rejects.toMatchObject({ name: 'TimeoutError' });
      expect(performance.now() - started).toBeGreaterThanOrEqual(240);
      expect(b.proxy.stalledCount).toBe(1);
    });
  }

  it("a step whose write stalls rejects with its signal's reason; without one, with a TimeoutError at reportTimeoutMs", async () => {
    let stallWrites = false;
    const b = await stalling((body) => stallWrites && isWrite(body));
    const booking = await book(b, 10);
    b.clock.advance(1);
    stallWrites = true;
    const controller = new AbortController();
    const stepping = booking.step(HALF_REFUSED, { signal: controller.signal });
    await b.proxy.nextStall();
    const reason = new Error('report budget spent');
    controller.abort(reason);
    await expect(stepping).rejects.toBe(reason);
    const started = performance.now();
    await expect(booking.report(HALF_REFUSED)).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
    expect(b.proxy.stalledCount).toBe(2);
    expect(await backend.stored(b.name)).toMatchObject({ rate: 100, version: 1 });
  });
});
