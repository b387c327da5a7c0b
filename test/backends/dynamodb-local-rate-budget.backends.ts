// DynamoRateBudget races on DynamoDB Local (AWS's own emulator): independent budgets, each with its own
// client as in separate Lambda containers, booking one prefix's schedule at once. The single-booker contract
// (booking, writeBy and latestStart, steps and reports, lost answers, stalls, a missing table, createTable)
// runs here too: this run includes the rate budget suites written for dynalite, pointed at DynamoDB Local
// (see vitest.backends.config.mts).
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoRateBudget, type RateBooking, SemaphoreTimeoutError } from '../../lib/semaphore/index.js';
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
 * `count` budgets named `name`, each on its own client, sharing one clock that stands still unless a lost
 * race backs off (`clock.backoffs` counts those): which bookings fit is then exact, however the races go.
 */
function contenders(count: number, name: string, ceiling: number) {
  const clock = manualClock();
  const budgets = Array.from({ length: count }, () => {
    const client = new DynamoDBClient(localClientConfig('dynamodb'));
    clients.push(client);
    return new DynamoRateBudget({
      client,
      tableName: backend.tableName(),
      name,
      ceiling,
      now: clock.now,
      random: clock.random,
    });
  });
  return { clock, budgets };
}

const settledBookings = (outcomes: PromiseSettledResult<RateBooking>[]) => ({
  bookings: outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : [])),
  errors: outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason as unknown] : [])),
});

describe('DynamoRateBudget on DynamoDB Local: races', () => {
  it('talks to DynamoDB Local, not to an embedded emulator', async () => {
    const endpoint = await backend.client().config.endpoint?.();
    expect(`${endpoint?.protocol}//${endpoint?.hostname}:${endpoint?.port}`).toBe(
      backendEndpoints().dynamodbLocal.endpoint,
    );
  });

  it('20 bookers race for 10 writes each at 100/s, latest start in 500 ms: exactly 6 book, back to back; 14 are told when the schedule frees', async () => {
    const name = budgetName('latest');
    const { clock, budgets } = contenders(20, name, 100);
    const t0 = clock.now();
    const latestStart = t0 + 500;
    const { bookings, errors } = settledBookings(
      await Promise.allSettled(
        budgets.map((budget) => budget.book({ writes: 10, latestStart, writeBy: t0 + 600_000 })),
      ),
    );

    expect(clock.backoffs).toBeGreaterThan(0);
    expect(bookings.map((b) => b.startAt).sort((a, b) => a - b)).toEqual(
      [0, 1, 2, 3, 4, 5].map((k) => t0 + k * 100),
    );
    expect(overlapping(bookings)).toEqual([]);
    expect(errors).toHaveLength(14);
    for (const err of errors) {
      expect(err).toBeInstanceOf(SemaphoreTimeoutError);
      expect(err).toMatchObject({ semaphore: name, deadline: latestStart, freeAt: t0 + 600 });
    }
    // One schedule write per booking, whoever lost races on the way.
    expect(await backend.stored(name)).toMatchObject({ rate: 100, freeAt: t0 + 600, version: 6 });
  });

  it('10 bookers each wanting 30 writes at 100/s before a cutoff 1 s away: the bookings share out exactly its 100 slots', async () => {
    const name = budgetName('write-by');
    const { clock, budgets } = contenders(10, name, 100);
    const t0 = clock.now();
    const writeBy = t0 + 1_000;
    const { bookings, errors } = settledBookings(
      await Promise.allSettled(
        budgets.map((budget) => budget.book({ writes: 30, latestStart: t0 + 600_000, writeBy })),
      ),
    );

    expect(clock.backoffs).toBeGreaterThan(0);
    expect(bookings.map((b) => b.writes).sort((a, b) => b - a)).toEqual([30, 30, 30, 10]);
    expect(overlapping(bookings)).toEqual([]);
    expect(Math.max(...bookings.map((b) => b.endsAt))).toBe(writeBy);
    expect(errors).toHaveLength(6);
    for (const err of errors) expect(err).toMatchObject({ name: 'SemaphoreTimeoutError', freeAt: writeBy });
    expect(await backend.stored(name)).toMatchObject({ freeAt: writeBy, version: 4 });
  });
});
