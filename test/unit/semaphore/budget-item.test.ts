// The budget item's requests (docs/fleet-cap.md#state): its key, the one conditional write on the version it
// read, placeholders for every attribute and only the ones used, the rate grid, and the parser.
import { describe, expect, it } from 'vitest';
import {
  budgetKey,
  createBudgetRequest,
  newSchedule,
  parseBudgetItem,
  readBudgetRequest,
  writeScheduleRequest,
} from '../../../lib/semaphore/budget-item.js';
import { floorToRateGrid, onRateGrid, type Schedule } from '../../../lib/semaphore/rate-schedule.js';

/** Every placeholder an expression uses is declared, and every one declared is used. */
function expectPlaceholdersMatch(input: {
  UpdateExpression?: string;
  ConditionExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Record<string, unknown>;
}) {
  const text = `${input.UpdateExpression ?? ''} ${input.ConditionExpression ?? ''}`;
  const used = (prefix: string) => [...new Set(text.match(new RegExp(`${prefix}\\w+`, 'g')) ?? [])].sort();
  expect(Object.keys(input.ExpressionAttributeNames ?? {}).sort()).toEqual(used('#'));
  expect(Object.keys(input.ExpressionAttributeValues ?? {}).sort()).toEqual(used(':'));
  // No bare attribute name: every path segment is a placeholder.
  expect(text.replace(/[#:]\w+/g, '')).not.toMatch(/\b(rate|freeAt|decreasedAt|version|by|pk)\b/);
}

const read: Schedule = { rate: 100, freeAt: 1_700_000_000_500, decreasedAt: 7, version: 41, by: 'A' };

describe('budget item requests', () => {
  it('keys the item rate#<name> / schedule and reads it strongly consistent', () => {
    expect(budgetKey('prefix:b/t=acme/')).toEqual({
      pk: { S: 'rate#prefix:b/t=acme/' },
      sk: { S: 'schedule' },
    });
    expect(readBudgetRequest('t', 'p')).toEqual({
      TableName: 't',
      Key: budgetKey('p'),
      ConsistentRead: true,
    });
  });

  it('creates the item at the ceiling, every slot free, only when absent', () => {
    const input = createBudgetRequest('t', 'p', 3500);
    expect(input.Item).toEqual({
      pk: { S: 'rate#p' },
      sk: { S: 'schedule' },
      rate: { N: '3500' },
      freeAt: { N: '0' },
      decreasedAt: { N: '0' },
      version: { N: '0' },
      by: { S: '' },
    });
    expect(input.ConditionExpression).toBe('attribute_not_exists(#pk)');
    expectPlaceholdersMatch(input);
    expect(newSchedule(3500)).toEqual({ rate: 3500, freeAt: 0, decreasedAt: 0, version: 0, by: '' });
  });

  it('writes the whole change and the next version, on the condition that the version is the one read', () => {
    const input = writeScheduleRequest(
      't',
      'p',
      read,
      { rate: 53.125, freeAt: 1_700_000_000_900, decreasedAt: 7 },
      'B',
    );
    expect(input.Key).toEqual(budgetKey('p'));
    expect(input.ConditionExpression).toBe('#version = :read');
    expect(input.ExpressionAttributeValues).toEqual({
      ':rate': { N: '53.125' },
      ':freeAt': { N: '1700000000900' },
      ':decreasedAt': { N: '7' },
      ':next': { N: '42' },
      ':read': { N: '41' },
      ':by': { S: 'B' },
    });
    expectPlaceholdersMatch(input);
  });

  it('is constant in size: the item has the same attributes whatever was booked', () => {
    const small = writeScheduleRequest('t', 'p', read, { rate: 1, freeAt: 1, decreasedAt: 0 }, 'x');
    const large = writeScheduleRequest(
      't',
      'p',
      { ...read, version: 10 ** 9 },
      { rate: 3500, freeAt: 9e12, decreasedAt: 9e12 },
      'y',
    );
    expect(Object.keys(large.ExpressionAttributeValues ?? {})).toEqual(
      Object.keys(small.ExpressionAttributeValues ?? {}),
    );
    expect(large.UpdateExpression).toBe(small.UpdateExpression);
  });
});

describe('the rate grid', () => {
  it('keeps rates to a millionth, a ceiling rounded down', () => {
    expect(onRateGrid(0.1 + 0.2)).toBe(0.3);
    expect(String(onRateGrid(3500 * (1 - 11 / 1000)))).toBe('3461.5');
    expect(String(onRateGrid(2000 / 3))).toBe('666.666667');
    expect(floorToRateGrid(4.35)).toBe(4.35);
    expect(floorToRateGrid(1.0000019)).toBe(1.000001);
    expect(floorToRateGrid(1 / 3)).toBe(0.333333);
  });

  it('round-trips through the item: a rate written reads back as the same number', () => {
    for (const rate of [onRateGrid(2000 / 3), onRateGrid(3500 * 0.989), 0.000001, 53.125]) {
      const { ExpressionAttributeValues: values } = writeScheduleRequest(
        't',
        'p',
        read,
        { rate, freeAt: 1, decreasedAt: 0 },
        'x',
      );
      const parsed = parseBudgetItem({
        rate: values![':rate']!,
        freeAt: { N: '1' },
        decreasedAt: { N: '0' },
        version: { N: '1' },
      });
      expect(parsed?.rate).toBe(rate);
    }
  });
});

describe('parseBudgetItem', () => {
  it('reads the item, and nothing as undefined', () => {
    expect(parseBudgetItem(undefined)).toBeUndefined();
    expect(
      parseBudgetItem({
        pk: { S: 'rate#p' },
        sk: { S: 'schedule' },
        rate: { N: '50.5' },
        freeAt: { N: '1700000000123' },
        decreasedAt: { N: '7' },
        version: { N: '3' },
        by: { S: 'B' },
      }),
    ).toEqual({ rate: 50.5, freeAt: 1_700_000_000_123, decreasedAt: 7, version: 3, by: 'B' });
  });

  it('reads a missing writer as none', () => {
    const item = parseBudgetItem({
      rate: { N: '1' },
      freeAt: { N: '0' },
      decreasedAt: { N: '0' },
      version: { N: '0' },
    });
    expect(item?.by).toBe('');
  });

  it('refuses an item that is not a budget item, naming it: a missing, non-numeric or non-positive rate', () => {
    const good = {
      pk: { S: 'rate#p' },
      rate: { N: '1' },
      freeAt: { N: '0' },
      decreasedAt: { N: '0' },
      version: { N: '0' },
    };
    for (const broken of [
      { ...good, rate: undefined },
      { ...good, rate: { N: '0' } },
      { ...good, rate: { N: '-5' } },
      { ...good, freeAt: { N: 'Infinity' } },
      { ...good, decreasedAt: { S: '7' } },
      { ...good, version: undefined },
    ]) {
      const parse = () => parseBudgetItem(broken as Parameters<typeof parseBudgetItem>[0]);
      expect(parse).toThrow(TypeError);
      expect(parse).toThrowError(expect.objectContaining({ message: expect.stringContaining('rate#p') }));
    }
  });
});
