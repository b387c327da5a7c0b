import type {
  AttributeValue,
  GetItemCommandInput,
  PutItemCommandInput,
  UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb';

/*
 * A prefix's rate budget, one item in the semaphore table (docs/fleet-cap.md#state):
 *
 *   pk           S  "rate#<name>"
 *   sk           S  "budget"
 *   budget       N  writes per second the fleet may send now
 *   free         N  budget minus the holders' rates; negative after a decrease while leases are held
 *   holders      M  { "<fence>": { r: N (rate), until: N (epoch ms), at: N (epoch ms granted),
 *                       due: N (epoch ms the holder expects to be done) } }
 *   decreasedAt  N  epoch ms of the last decrease (0: never)
 *
 * Every write keeps `free = budget - sum(holders[*].r)`. Every attribute goes through a placeholder, and a
 * request names only the placeholders its expressions use (DynamoDB rejects unused ones).
 */

/**
 * One holder's entry: its granted rate, when its lease ends, when it was granted, and when it expects to
 * be done (its writes at its rate; absent when it did not say), all epoch ms.
 */
export interface BudgetHolder {
  readonly r: number;
  readonly until: number;
  readonly at: number;
  readonly due?: number;
}

/** The budget item as read. */
export interface BudgetItem {
  readonly budget: number;
  readonly free: number;
  readonly decreasedAt: number;
  readonly holders: ReadonlyMap<string, BudgetHolder>;
}

/** A release's step of the budget, computed from the budget its lease read (`read`). */
export interface BudgetStep {
  /** The budget the step was computed from: it applies only while the budget still is this. */
  readonly read: number;
  /** The budget after the step. */
  readonly after: number;
  /** Set on a decrease: stamped as `decreasedAt`, and the step needs no decrease since `takenAt`. */
  readonly decrease?: { readonly now: number; readonly takenAt: number };
}

/** Expired holders one reclaim write removes at most (bounds the expression; the next reader takes the rest). */
export const MAX_RECLAIM_PER_WRITE = 25;

/**
 * Rates are kept on a grid of a millionth of a write per second: DynamoDB adds and compares numbers as
 * exact decimals, so a value with at most six decimals reads back as the same number it was written as,
 * and sums of such values stay exact (a release's `budget = :read` then holds when nothing moved it).
 */
export function onRateGrid(rate: number): number {
  return Math.round(rate * 1e6) / 1e6;
}

/** `rate` rounded down to the grid (a grant never exceeds what is free by rounding). */
export function floorToRateGrid(rate: number): number {
  return Math.floor(rate * 1e6 + 1e-3) / 1e6;
}

/** `rate` rounded up to the grid (a least rate is never lowered by rounding). */
export function ceilToRateGrid(rate: number): number {
  return Math.ceil(rate * 1e6 - 1e-3) / 1e6;
}

const num = (n: number): AttributeValue => ({ N: String(n) });

const attributeNames = {
  '#budget': 'budget',
  '#free': 'free',
  '#holders': 'holders',
  '#decreasedAt': 'decreasedAt',
  '#r': 'r',
  '#until': 'until',
  '#at': 'at',
} as const;

function namesFor(expressions: string, extra: Record<string, string>): Record<string, string> {
  const all: Record<string, string> = { ...attributeNames, ...extra };
  return Object.fromEntries(Object.entries(all).filter(([placeholder]) => expressions.includes(placeholder)));
}

/** The key of budget `name`'s item. */
export function budgetKey(name: string): Record<string, AttributeValue> {
  return { pk: { S: `rate#${name}` }, sk: { S: 'budget' } };
}

/** Reads the item, strongly consistent. */
export function readBudgetRequest(tableName: string, name: string): GetItemCommandInput {
  return { TableName: tableName, Key: budgetKey(name), ConsistentRead: true };
}

/** Creates the item at `ceiling`, every write per second free, unless it exists (a lost race is harmless). */
export function createBudgetRequest(tableName: string, name: string, ceiling: number): PutItemCommandInput {
  return {
    TableName: tableName,
    Item: {
      ...budgetKey(name),
      budget: num(ceiling),
      free: num(ceiling),
      holders: { M: {} },
      decreasedAt: num(0),
    },
    ConditionExpression: 'attribute_not_exists(#pk)',
    ExpressionAttributeNames: { '#pk': 'pk' },
  };
}

function update(
  tableName: string,
  name: string,
  updateExpression: string,
  condition: string,
  extraNames: Record<string, string>,
  values: Record<string, AttributeValue>,
): UpdateItemCommandInput {
  return {
    TableName: tableName,
    Key: budgetKey(name),
    UpdateExpression: updateExpression,
    ConditionExpression: condition,
    ExpressionAttributeNames: namesFor(`${updateExpression} ${condition}`, extraNames),
    ExpressionAttributeValues: values,
  };
}

/**
 * Takes `holder.r` for lease `fence` when `free >= need` and the fence holds nothing yet. `need` is the rate
 * plus what the budget stands above the taker's ceiling (a process configured lower grants only what a
 * budget at its ceiling would leave free); `holder.r` without.
 */
export function takeRequest(
  tableName: string,
  name: string,
  fence: string,
  holder: BudgetHolder,
  need: number = holder.r,
): UpdateItemCommandInput {
  return update(
    tableName,
    name,
    'SET #holders.#f = :entry, #free = #free - :g',
    '#free >= :need AND attribute_not_exists(#holders.#f)',
    { '#f': fence },
    {
      ':entry': {
        M: {
          r: num(holder.r),
          until: num(holder.until),
          at: num(holder.at),
          ...(holder.due === undefined ? {} : { due: num(holder.due) }),
        },
      },
      ':g': num(holder.r),
      ':need': num(need),
    },
  );
}

/** Gives lease `fence`'s `granted` rate back, while its entry holds that rate (not reclaimed). */
export function releaseRequest(
  tableName: string,
  name: string,
  fence: string,
  granted: number,
): UpdateItemCommandInput {
  return update(
    tableName,
    name,
    'REMOVE #holders.#f SET #free = #free + :g',
    '#holders.#f.#r = :g',
    { '#f': fence },
    { ':g': num(granted) },
  );
}

/**
 * Gives lease `fence`'s `granted` rate back and moves the budget by `step` in the same write: `free` gains
 * the rate plus the step. Conditional on the entry, on the budget still being `step.read` (no stale step),
 * and for a decrease on no decrease since the lease was taken (one decrease per round of leases). Setting
 * the budget to `step.after` is `budget + delta` under that condition, and keeps the stored value one the
 * reader reads back exactly.
 */
export function stepReleaseRequest(
  tableName: string,
  name: string,
  fence: string,
  granted: number,
  step: BudgetStep,
): UpdateItemCommandInput {
  const values: Record<string, AttributeValue> = {
    ':g': num(granted),
    ':freed': num(onRateGrid(granted + step.after - step.read)),
    ':after': num(step.after),
    ':read': num(step.read),
  };
  let updateExpression = 'REMOVE #holders.#f SET #free = #free + :freed, #budget = :after';
  let condition = '#holders.#f.#r = :g AND #budget = :read';
  if (step.decrease !== undefined) {
    updateExpression += ', #decreasedAt = :now';
    condition += ' AND #decreasedAt < :takenAt';
    values[':now'] = num(step.decrease.now);
    values[':takenAt'] = num(step.decrease.takenAt);
  }
  return update(tableName, name, updateExpression, condition, { '#f': fence }, values);
}

/**
 * Removes up to `MAX_RECLAIM_PER_WRITE` of the `expired` holders and frees their rates, conditional on
 * each entry being unchanged since read (one that another reader reclaimed, or that was released, is not
 * freed twice). `freed`: what the write frees when it applies.
 */
export function reclaimRequest(
  tableName: string,
  name: string,
  expired: readonly (readonly [string, BudgetHolder])[],
): { input: UpdateItemCommandInput; freed: number } {
  const batch = expired.slice(0, MAX_RECLAIM_PER_WRITE);
  const extraNames: Record<string, string> = {};
  const values: Record<string, AttributeValue> = {};
  let freed = 0;
  batch.forEach(([fence, holder], i) => {
    extraNames[`#h${i}`] = fence;
    values[`:u${i}`] = num(holder.until);
    values[`:r${i}`] = num(holder.r);
    freed = onRateGrid(freed + holder.r);
  });
  values[':freed'] = num(freed);
  const input = update(
    tableName,
    name,
    `REMOVE ${batch.map((_, i) => `#holders.#h${i}`).join(', ')} SET #free = #free + :freed`,
    batch.map((_, i) => `#holders.#h${i}.#until = :u${i} AND #holders.#h${i}.#r = :r${i}`).join(' AND '),
    extraNames,
    values,
  );
  return { input, freed };
}

/**
 * When `least` will be free by what the holders said (each gives its rate back at its `due`): `now` when
 * it is free already, or when a holder needed for it is past its due or said nothing (it may be done any
 * moment: poll); `Infinity` when not even every holder's rate would make it.
 */
export function freeAt(free: number, holders: Iterable<BudgetHolder>, least: number, now: number): number {
  if (free >= least) return now;
  let freed = free;
  const dueOf = (h: BudgetHolder) => h.due ?? Number.NEGATIVE_INFINITY;
  for (const holder of [...holders].sort((a, b) => dueOf(a) - dueOf(b))) {
    freed += holder.r;
    if (freed >= least) return Math.max(now, dueOf(holder));
  }
  return Number.POSITIVE_INFINITY;
}

/** The holders whose lease ended before `now`: any reader may reclaim their rates. */
export function expiredHolders(item: BudgetItem, now: number): [string, BudgetHolder][] {
  return [...item.holders].filter(([, holder]) => holder.until < now);
}

const numberOf = (value: AttributeValue | undefined): number => Number(value?.N ?? Number.NaN);

/** The item a GetItem answered (`undefined`: none yet). Throws on an item that is not a budget item. */
export function parseBudgetItem(raw: Record<string, AttributeValue> | undefined): BudgetItem | undefined {
  if (raw === undefined) return undefined;
  const holders = new Map<string, BudgetHolder>();
  for (const [fence, value] of Object.entries(raw.holders?.M ?? {})) {
    const entry = value.M ?? {};
    holders.set(fence, {
      r: numberOf(entry.r),
      until: numberOf(entry.until),
      at: numberOf(entry.at),
      ...(entry.due === undefined ? {} : { due: numberOf(entry.due) }),
    });
  }
  const item = {
    budget: numberOf(raw.budget),
    free: numberOf(raw.free),
    decreasedAt: numberOf(raw.decreasedAt),
    holders,
  };
  const broken = [
    item.budget,
    item.free,
    item.decreasedAt,
    ...[...holders.values()].flatMap((h) => [h.r, h.until, h.at, h.due ?? 0]),
  ];
  if (broken.some((n) => !Number.isFinite(n)))
    throw new TypeError(`budget item ${raw.pk?.S ?? '?'} is not a budget item: ${JSON.stringify(raw)}`);
  return item;
}
