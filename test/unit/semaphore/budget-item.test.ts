// The budget item's requests (docs/fleet-cap.md#state): the conditions each write carries, placeholders for
// every attribute and only the ones used, the reclaim bound, the rate grid, and the parser.
import { describe, expect, it } from 'vitest';
import {
  ceilToRateGrid,
  createBudgetRequest,
  floorToRateGrid,
  freeAt,
  onRateGrid,
  parseBudgetItem,
  reclaimRequest,
  releaseRequest,
  stepReleaseRequest,
  takeRequest,
} from '../../../lib/semaphore/budget-item.js';

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
  expect(text.replace(/[#:]\w+/g, '')).not.toMatch(/\b(budget|free|holders|decreasedAt|until)\b/);
}

describe('budget item requests', () => {
  it('keys the item rate#<name> / budget and creates it at the ceiling only when absent', () => {
    const input = createBudgetRequest('t', 'p', 3500);
    expect(input.Item).toEqual({
      pk: { S: 'rate#p' },
      sk: { S: 'budget' },
      budget: { N: '3500' },
      free: { N: '3500' },
      holders: { M: {} },
      decreasedAt: { N: '0' },
    });
    expect(input.ConditionExpression).toBe('attribute_not_exists(#pk)');
  });

  it('takes on free >= need for a fence that holds nothing', () => {
    const input = takeRequest('t', 'p', 'F1', { r: 30, until: 2_000, at: 1_000, due: 1_500 }, 40);
    expect(input.UpdateExpression).toBe('SET #holders.#f = :entry, #free = #free - :g');
    expect(input.ConditionExpression).toBe('#free >= :need AND attribute_not_exists(#holders.#f)');
    expect(input.ExpressionAttributeNames?.['#f']).toBe('F1');
    expect(input.ExpressionAttributeValues).toMatchObject({
      ':g': { N: '30' },
      ':need': { N: '40' },
      ':entry': { M: { r: { N: '30' }, until: { N: '2000' }, at: { N: '1000' }, due: { N: '1500' } } },
    });
    expectPlaceholdersMatch(input);
  });

  it('steps only from the budget read; a decrease also needs no decrease since the grant', () => {
    const increase = stepReleaseRequest('t', 'p', 'F1', 30, { read: 100, after: 103.125 });
    expect(increase.ConditionExpression).toBe('#holders.#f.#r = :g AND #budget = :read');
    expect(increase.ExpressionAttributeValues).toMatchObject({
      ':freed': { N: '33.125' },
      ':after': { N: '103.125' },
      ':read': { N: '100' },
    });
    expectPlaceholdersMatch(increase);
    const decrease = stepReleaseRequest('t', 'p', 'F1', 30, {
      read: 100,
      after: 50,
      decrease: { now: 9, takenAt: 5 },
    });
    expect(decrease.UpdateExpression).toContain('#decreasedAt = :now');
    expect(decrease.ConditionExpression).toBe(
      '#holders.#f.#r = :g AND #budget = :read AND #decreasedAt < :takenAt',
    );
    expect(decrease.ExpressionAttributeValues?.[':freed']).toEqual({ N: '-20' });
    expectPlaceholdersMatch(decrease);
    const plain = releaseRequest('t', 'p', 'F1', 30);
    expect(plain.ConditionExpression).toBe('#holders.#f.#r = :g');
    expectPlaceholdersMatch(plain);
  });

  it('reclaims at most 25 holders per write, each only if unchanged', () => {
    const expired = Array.from(
      { length: 30 },
      (_, i) => [`F${i}`, { r: 0.5, until: i, at: 0, due: i }] as const,
    );
    const { input, freed } = reclaimRequest('t', 'p', expired);
    expect(freed).toBe(12.5);
    expect(input.UpdateExpression?.match(/#holders\.#h\d+/g)).toHaveLength(25);
    expect(input.ConditionExpression).toContain('#holders.#h24.#until = :u24 AND #holders.#h24.#r = :r24');
    expect(input.ConditionExpression).not.toContain('#h25');
    expectPlaceholdersMatch(input);
  });
});

describe('the rate grid', () => {
  it('keeps rates to a millionth, rounding grants down and least rates up', () => {
    expect(onRateGrid(0.1 + 0.2)).toBe(0.3);
    expect(floorToRateGrid(4.35)).toBe(4.35);
    expect(floorToRateGrid(1.0000019)).toBe(1.000001);
    expect(ceilToRateGrid(4.35)).toBe(4.35);
    expect(ceilToRateGrid(1.0000011)).toBe(1.000002);
    expect(String(onRateGrid(3500 * (1 - 11 / 1000)))).toBe('3461.5');
    expect(String(onRateGrid(2000 / 3))).toBe('666.666667');
  });
});

describe('parseBudgetItem', () => {
  it('reads the item, and nothing as undefined', () => {
    expect(parseBudgetItem(undefined)).toBeUndefined();
    const item = parseBudgetItem({
      budget: { N: '50.5' },
      free: { N: '-10' },
      decreasedAt: { N: '7' },
      holders: {
        M: {
          F1: { M: { r: { N: '60.5' }, until: { N: '9' }, at: { N: '3' }, due: { N: '5' } } },
          // An entry that announced nothing.
          F2: { M: { r: { N: '1' }, until: { N: '8' }, at: { N: '3' } } },
        },
      },
    });
    expect(item).toEqual({
      budget: 50.5,
      free: -10,
      decreasedAt: 7,
      holders: new Map([
        ['F1', { r: 60.5, until: 9, at: 3, due: 5 }],
        ['F2', { r: 1, until: 8, at: 3 }],
      ]),
    });
  });
});

describe('freeAt', () => {
  const holder = (r: number, due: number) => ({ r, until: 10_000, at: 0, due });

  it('is now when least is free already', () => {
    expect(freeAt(5, [holder(10, 500)], 5, 100)).toBe(100);
  });

  it('is the due time of the holder whose rate makes least free, earliest first', () => {
    const holders = [holder(10, 900), holder(10, 300), holder(10, 600)];
    expect(freeAt(0, holders, 10, 100)).toBe(300);
    expect(freeAt(0, holders, 15, 100)).toBe(600);
    expect(freeAt(-10, holders, 15, 100)).toBe(900);
  });

  it('counts a holder past its due, or one that said nothing, as due now', () => {
    expect(freeAt(0, [holder(10, 50)], 10, 100)).toBe(100);
    expect(freeAt(0, [{ r: 10, until: 10_000, at: 0 }, holder(10, 900)], 10, 100)).toBe(100);
  });

  it('is infinity when every holder together would not free least', () => {
    expect(freeAt(0, [holder(1, 200), holder(2, 300)], 10, 100)).toBe(Number.POSITIVE_INFINITY);
  });

  it('refuses an item that is not a budget item', () => {
    const broken = () => parseBudgetItem({ pk: { S: 'rate#p' }, free: { N: '1' } });
    expect(broken).toThrow(TypeError);
    expect(broken).toThrowError(expect.objectContaining({ message: expect.stringContaining('rate#p') }));
  });
});
