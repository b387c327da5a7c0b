// The rate budgets' options and take/release arguments: bad values are typed errors naming what is wrong,
// raised before any request (the DynamoDB client here refuses every request).
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import {
  DynamoRateBudget,
  type DynamoRateBudgetOptions,
  InvalidPermitRequestError,
  InvalidSemaphoreOptionsError,
  type LeaseReport,
  MemoryRateBudget,
  type TakeOptions,
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
  it('refuse a ceiling that is not a positive number, naming it', () => {
    for (const ceiling of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, 1e-7]) {
      expect(() => dynamo({ ceiling })).toThrow(InvalidSemaphoreOptionsError);
      expect(() => dynamo({ ceiling })).toThrowError(expect.objectContaining(optionError('ceiling')));
      expect(() => new MemoryRateBudget({ ceiling })).toThrowError(
        expect.objectContaining(optionError('ceiling')),
      );
    }
  });

  it('refuse an empty name and a give-back bound that is not a positive number', () => {
    expect(() => dynamo({ name: '' })).toThrowError(expect.objectContaining(optionError('name')));
    for (const giveBackTimeoutMs of [0, -5, Number.NaN])
      expect(() => dynamo({ giveBackTimeoutMs })).toThrowError(
        expect.objectContaining(optionError('giveBackTimeoutMs')),
      );
  });

  it('keep the ceiling to a millionth and name the budget', () => {
    expect(dynamo({ ceiling: 3500 }).ceiling).toBe(3500);
    expect(dynamo({ ceiling: 1 / 3 }).ceiling).toBe(0.333333);
    expect(new MemoryRateBudget({ ceiling: 10 }).name).toBe('memory');
  });
});

describe('take arguments', () => {
  const now = Date.now();
  const good: TakeOptions = { least: 1, deadline: now + 1_000, leaseMs: 1_000 };
  const cases: [string, number, Partial<TakeOptions>, string][] = [
    ['want 0', 0, {}, 'want'],
    ['want negative', -1, {}, 'want'],
    ['want NaN', Number.NaN, {}, 'want'],
    ['want infinite', Number.POSITIVE_INFINITY, {}, 'want'],
    ['least 0', 10, { least: 0 }, 'least'],
    ['least NaN', 10, { least: Number.NaN }, 'least'],
    ['least above want', 10, { least: 11 }, 'least = 11 exceeds want = 10'],
    ['deadline NaN', 10, { deadline: Number.NaN }, 'deadline'],
    ['leaseMs 0', 10, { leaseMs: 0 }, 'leaseMs'],
    ['leaseMs infinite', 10, { leaseMs: Number.POSITIVE_INFINITY }, 'leaseMs'],
  ];
  for (const budget of [dynamo(), new MemoryRateBudget({ ceiling: 100 })]) {
    for (const [what, want, over, message] of cases) {
      it(`${budget.constructor.name}: ${what} is an InvalidPermitRequestError`, async () => {
        await expect(budget.take(want, { ...good, ...over })).rejects.toMatchObject({
          name: 'InvalidPermitRequestError',
          message: expect.stringContaining(message),
        });
      });
    }
  }

  it('a want above the ceiling is not an error: the grant is clamped to the ceiling', async () => {
    const lease = await new MemoryRateBudget({ ceiling: 100 }).take(1_000, good);
    expect(lease.rate).toBe(100);
  });

  it('a least above the ceiling is not an error: the whole budget is granted once nothing holds it', async () => {
    const lease = await new MemoryRateBudget({ ceiling: 100 }).take(1_000, { ...good, least: 500 });
    expect(lease.rate).toBe(100);
  });
});

describe('release report', () => {
  const bad: [string, LeaseReport][] = [
    ['accepted', { accepted: -1, throttled: 0, starved: false }],
    ['throttled', { accepted: 1, throttled: Number.NaN, starved: false }],
    ['starved', { accepted: 1, throttled: 0, starved: 'yes' as unknown as boolean }],
  ];
  for (const [field, report] of bad) {
    it(`refuses a bad ${field} with InvalidPermitRequestError, before releasing anything`, async () => {
      const budget = new MemoryRateBudget({ ceiling: 10 });
      const lease = await budget.take(10, { least: 1, deadline: Date.now(), leaseMs: 60_000 });
      const releasing = lease.release(report);
      await expect(releasing).rejects.toBeInstanceOf(InvalidPermitRequestError);
      await expect(releasing).rejects.toMatchObject({ message: expect.stringContaining(field) });
      expect(budget.table.item('memory')?.free).toBe(0);
    });
  }
});
