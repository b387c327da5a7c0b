// DynamoRateBudget races on DynamoDB Local (AWS's own emulator): independent budgets, each with its own
// client as in separate Lambda containers, booking one prefix's schedule at once. The single-booker contract
// (booking, writeBy and latestStart, steps and reports, lost answers, stalls, a missing table, createTable)
// runs here too: this run includes the rate budget suites written for dynalite, pointed at DynamoDB Local
// (see vitest.backends.config.mts).
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BookOptions, DynamoRateBudget, SemaphoreTimeoutError } from '../../lib/semaphore/index.js';
import {
  budgetName,
  dynamoBackend,
  manualClock,
  overlapping,
} from '../integration/semaphore/support/budget.js';
import { localClientConfig } from '../support/local-aws.js';
import { backendEndpoints } from './support/backends.js';

const backend = dynamoBackend();
const clients: DynamoDBClient[] = [];
beforeAll(() => backend.setup());
afterAll(() => {
  for (const client of clients.splice(0)) client.destroy();
});

/**
 * `count` budgets of one fresh name at 100 writes/s, each on its own client, book at once what `ask(t0)` says.
 * They share one clock that stands still unless a lost race backs off (`clock.backoffs` counts those): which
 * bookings fit is then exact, however the races go.
 */
async function race(count: number, label: string, ask: (t0: number) => BookOptions) {
  const name = budgetName(label);
  const clock = manualClock();
  const t0 = clock.now();
  const budgets = Array.from({ length: count }, () => {
    const client = new DynamoDBClient(localClientConfig('dynamodb'));
    clients.push(client);
    const config = { client, tableName: backend.tableName(), name, ceiling: 100 };
    return new DynamoRateBudget({ ...config, now: clock.now, random: clock.random });
  });
  const outcomes = await Promise.allSettled(budgets.map((budget) => budget.book(ask(t0))));
  return {
    name,
    t0,
    backoffs: clock.backoffs,
    bookings: outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : [])),
    errors: outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason as unknown] : [])),
  };
}

describe('DynamoRateBudget on DynamoDB Local: races', () => {
  it('talks to DynamoDB Local, not to an embedded emulator', async () => {
    const endpoint = await backend.client().config.endpoint?.();
    expect(`${endpoint?.protocol}//${endpoint?.hostname}:${endpoint?.port}`).toBe(
      backendEndpoints().dynamodbLocal.endpoint,
    );
  });

  it('20 bookers race for 10 writes each at 100/s, latest start in 500 ms: exactly 6 book, back to back; 14 are told when the schedule frees', async () => {
    const { name, t0, backoffs, bookings, errors } = await race(20, 'latest', (t0) => ({
      writes: 10,
      latestStart: t0 + 500,
      writeBy: t0 + 600_000,
    }));

    expect(backoffs).toBeGreaterThan(0);
    expect(bookings.map((b) => b.startAt).sort((a, b) => a - b)).toEqual(
      [0, 1, 2, 3, 4, 5].map((k) => t0 + k * 100),
    );
    expect(overlapping(bookings)).toEqual([]);
    expect(errors).toHaveLength(14);
    for (const err of errors) {
      expect(err).toBeInstanceOf(SemaphoreTimeoutError);
      expect(err).toMatchObject({ semaphore: name, deadline: t0 + 500, freeAt: t0 + 600 });
    }
    // One schedule write per booking, whoever lost races on the way.
    expect(await backend.stored(name)).toMatchObject({ rate: 100, freeAt: t0 + 600, version: 6 });
  });

  it('10 bookers each wanting 30 writes at 100/s before a cutoff 1 s away: the bookings share out exactly its 100 slots', async () => {
    const { name, t0, backoffs, bookings, errors } = await race(10, 'write-by', (t0) => ({
      writes: 30,
      latestStart: t0 + 600_000,
      writeBy: t0 + 1_000,
    }));
    const writeBy = t0 + 1_000;

    expect(backoffs).toBeGreaterThan(0);
    expect(bookings.map((b) => b.writes).sort((a, b) => b - a)).toEqual([30, 30, 30, 10]);
    expect(overlapping(bookings)).toEqual([]);
    expect(Math.max(...bookings.map((b) => b.endsAt))).toBe(writeBy);
    expect(errors).toHaveLength(6);
    for (const err of errors) expect(err).toMatchObject({ name: 'SemaphoreTimeoutError', freeAt: writeBy });
    expect(await backend.stored(name)).toMatchObject({ freeAt: writeBy, version: 4 });
  });
});
