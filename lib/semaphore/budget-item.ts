import type {
  AttributeValue,
  GetItemCommandInput,
  PutItemCommandInput,
  UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import type { Schedule, ScheduleChange } from './rate-schedule.js';

/*
 * A prefix's rate budget, one item of constant size in the semaphore table (docs/fleet-cap.md#state):
 *
 *   pk           S  "rate#<name>"
 *   sk           S  "schedule"
 *   rate         N  writes per second the fleet may start against the prefix
 *   freeAt       N  epoch ms of the first free slot
 *   decreasedAt  N  epoch ms of the last decrease (0: never)
 *   version      N  writes applied since creation; every write is conditional on the one it read
 *   by           S  id of the booking or report that wrote last
 */

const num = (n: number): AttributeValue => ({ N: String(n) });

/** The key of budget `name`'s item. */
export function budgetKey(name: string): Record<string, AttributeValue> {
  return { pk: { S: `rate#${name}` }, sk: { S: 'schedule' } };
}

/** Reads the item, strongly consistent. */
export function readBudgetRequest(tableName: string, name: string): GetItemCommandInput {
  return { TableName: tableName, Key: budgetKey(name), ConsistentRead: true };
}

/** A new budget's schedule: at its starting rate (the ceiling unless told), every slot free, never decreased. */
export function newSchedule(rate: number): Schedule {
  return { rate, freeAt: 0, decreasedAt: 0, version: 0, by: '' };
}

/** Creates the item at `rate` unless it exists (a lost race is harmless: the winner's item is read). */
export function createBudgetRequest(tableName: string, name: string, rate: number): PutItemCommandInput {
  const schedule = newSchedule(rate);
  return {
    TableName: tableName,
    Item: {
      ...budgetKey(name),
      rate: num(schedule.rate),
      freeAt: num(schedule.freeAt),
      decreasedAt: num(schedule.decreasedAt),
      version: num(schedule.version),
      by: { S: schedule.by },
    },
    ConditionExpression: 'attribute_not_exists(#pk)',
    ExpressionAttributeNames: { '#pk': 'pk' },
  };
}

/** Writes `change` as writer `by`, on the condition that the item is still the version `read`. */
export function writeScheduleRequest(
  tableName: string,
  name: string,
  read: Schedule,
  change: ScheduleChange,
  by: string,
): UpdateItemCommandInput {
  return {
    TableName: tableName,
    Key: budgetKey(name),
    UpdateExpression:
      'SET #rate = :rate, #freeAt = :freeAt, #decreasedAt = :decreasedAt, #version = :next, #by = :by',
    ConditionExpression: '#version = :read',
    ExpressionAttributeNames: {
      '#rate': 'rate',
      '#freeAt': 'freeAt',
      '#decreasedAt': 'decreasedAt',
      '#version': 'version',
      '#by': 'by',
    },
    ExpressionAttributeValues: {
      ':rate': num(change.rate),
      ':freeAt': num(change.freeAt),
      ':decreasedAt': num(change.decreasedAt),
      ':next': num(read.version + 1),
      ':read': num(read.version),
      ':by': { S: by },
    },
  };
}

const numberOf = (value: AttributeValue | undefined): number => Number(value?.N ?? Number.NaN);

/** The schedule a GetItem answered (`undefined`: none yet). Throws on an item that is not a budget item. */
export function parseBudgetItem(raw: Record<string, AttributeValue> | undefined): Schedule | undefined {
  if (raw === undefined) return undefined;
  const schedule: Schedule = {
    rate: numberOf(raw.rate),
    freeAt: numberOf(raw.freeAt),
    decreasedAt: numberOf(raw.decreasedAt),
    version: numberOf(raw.version),
    by: raw.by?.S ?? '',
  };
  const numbers = [schedule.rate, schedule.freeAt, schedule.decreasedAt, schedule.version];
  if (numbers.some((n) => !Number.isFinite(n)) || !(schedule.rate > 0))
    throw new TypeError(`budget item ${raw.pk?.S ?? '?'} is not a rate budget item: ${JSON.stringify(raw)}`);
  return schedule;
}
