// The rate budgets' options and book/step/report arguments: bad values are typed errors naming what is
// wrong, raised before any request (the DynamoDB client here refuses every request).
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import {
  type BookOptions,
  DynamoRateBudget,
  type DynamoRateBudgetOptions,
  InvalidPermitRequestError,
  InvalidSemaphoreOptionsError,
  MemoryRateBudget,
  type WriteRound,
} from '../../../lib/semaphore/index.js';

const unused = {
  send: () => Promise.reject(new Error('no request expected')),
} as unknown as DynamoDBClient;
const dynamo = (over: Partial<DynamoRateBudgetOptions> = {}) =>
  new DynamoRateBudget({ client: unused, tableName: 't', name: 'prefix:t=acme', ceiling: 100, ...over });

const optionError = (option: string) => ({
  name: 'InvalidSemaphoreOptionsError',
  message: expect.stringContaining(option),
});

describe('rate budget options', () => {
  it('refuse a ceiling that is not a positive number of at least a millionth, naming it', () => {
    for (const ceiling of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, 1e-7, '100' as unknown as number]) {
      expect(() => dynamo({ ceiling })).toThrow(InvalidSemaphoreOptionsError);
      expect(() => dynamo({ ceiling })).toThrowError(expect.objectContaining(optionError('ceiling')));
      expect(() => new MemoryRateBudget({ ceiling })).toThrowError(
        expect.objectContaining(optionError('ceiling')),
      );
    }
  });

  it('refuse an empty name and a report bound that is not a positive number a timer keeps', () => {
    expect(() => dynamo({ name: '' })).toThrowError(expect.objectContaining(optionError('name')));
    expect(() => new MemoryRateBudget({ ceiling: 1, name: '' })).toThrowError(
      expect.objectContaining(optionError('name')),
    );
    // Past 2^31 - 1 ms a Node timer fires at once: such a bound would cut every report short.
    for (const reportTimeoutMs of [0, -5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31])
      expect(() => dynamo({ reportTimeoutMs })).toThrowError(
        expect.objectContaining(optionError('reportTimeoutMs')),
      );
  });

  it('keep the ceiling to a millionth and name the budget', () => {
    expect(dynamo({ ceiling: 3500 }).ceiling).toBe(3500);
    expect(dynamo({ ceiling: 1 / 3 }).ceiling).toBe(0.333333);
    expect(new MemoryRateBudget({ ceiling: 10 }).name).toBe('memory');
  });
});

describe('book arguments', () => {
  const now = Date.now();
  const good: BookOptions = { writes: 10, latestStart: now + 1_000, writeBy: now + 10_000 };
  const cases: [string, Partial<Record<keyof BookOptions, unknown>>, string][] = [
    ['writes 0', { writes: 0 }, 'writes'],
    ['writes negative', { writes: -1 }, 'writes'],
    ['writes fractional', { writes: 1.5 }, 'writes'],
    ['writes NaN', { writes: Number.NaN }, 'writes'],
    ['writes infinite', { writes: Number.POSITIVE_INFINITY }, 'writes'],
    ['latestStart NaN', { latestStart: Number.NaN }, 'latestStart'],
    ['latestStart infinite', { latestStart: Number.POSITIVE_INFINITY }, 'latestStart'],
    ['latestStart a date', { latestStart: new Date(now) }, 'latestStart'],
    ['writeBy NaN', { writeBy: Number.NaN }, 'writeBy'],
    ['writeBy infinite', { writeBy: Number.POSITIVE_INFINITY }, 'writeBy'],
    ['earliestStart NaN', { earliestStart: Number.NaN }, 'earliestStart'],
    ['earliestStart a string', { earliestStart: '5' as unknown as number }, 'earliestStart'],
    ['spanMs 0', { spanMs: 0 }, 'spanMs'],
    ['spanMs NaN', { spanMs: Number.NaN }, 'spanMs'],
    ['spanMs a string', { spanMs: '1000' as unknown as number }, 'spanMs'],
  ];
  for (const budget of [dynamo(), new MemoryRateBudget({ ceiling: 100 })]) {
    for (const [what, over, message] of cases) {
      it(`${budget.constructor.name}: ${what} is an InvalidPermitRequestError naming it`, async () => {
        await expect(budget.book({ ...good, ...over } as BookOptions)).rejects.toMatchObject({
          name: 'InvalidPermitRequestError',
          message: expect.stringContaining(message),
        });
      });
    }
  }

  it('a booking of more writes than fit is not an error: it books those that fit before writeBy', async () => {
    const booking = await new MemoryRateBudget({ ceiling: 100 }).book({ ...good, writes: 1_000_000 });
    expect(booking.writes).toBeLessThanOrEqual(1_000);
    expect(booking.endsAt).toBeLessThanOrEqual(good.writeBy);
  });
});

describe('step and report rounds', () => {
  const bad: [string, unknown][] = [
    ['accepted', { accepted: -1, throttled: 0, starved: false }],
    ['accepted', { accepted: Number.POSITIVE_INFINITY, throttled: 0, starved: false }],
    ['throttled', { accepted: 1, throttled: Number.NaN, starved: false }],
    ['starved', { accepted: 1, throttled: 0, starved: 'yes' }],
    ['must be an object', null],
  ];
  for (const [field, round] of bad) {
    it(`refuse a bad ${field} with InvalidPermitRequestError, before asking the store anything`, async () => {
      const budget = new MemoryRateBudget({ ceiling: 10 });
      const now = Date.now();
      const booking = await budget.book({ writes: 1, latestStart: now + 1_000, writeBy: now + 10_000 });
      const before = budget.table.item('memory');
      for (const call of [booking.step(round as WriteRound), booking.report(round as WriteRound)]) {
        await expect(call).rejects.toBeInstanceOf(InvalidPermitRequestError);
        await expect(call).rejects.toMatchObject({ message: expect.stringContaining(field) });
      }
      expect(budget.table.item('memory')).toBe(before);
      // A refused report may be made again, with a good round.
      await expect(booking.report({ accepted: 1, throttled: 0, starved: false })).resolves.toBeUndefined();
    });
  }
});
