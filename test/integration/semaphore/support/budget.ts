import { randomUUID } from 'node:crypto';
import { type DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import {
  DynamoRateBudget,
  MemoryBudgetTable,
  MemoryRateBudget,
  type RateBudget,
} from '../../../../lib/semaphore/index.js';
import type { Schedule } from '../../../../lib/semaphore/rate-schedule.js';
import { semaphoreTable } from './dynamo.js';

/** What a test passes to make a budget: the name picks the item, everything else is the process's config. */
export interface BudgetConfig {
  name: string;
  ceiling: number;
  now?: () => number;
  random?: () => number;
  client?: DynamoDBClient;
}

/** One implementation of `RateBudget` over storage shared by every budget it makes (a table). */
export interface BudgetBackend {
  readonly kind: string;
  /** Prepares the storage (the DynamoDB table); call once per file. */
  setup(): Promise<void>;
  /** A budget over the backend's storage: two with the same name share one item, as two processes do. */
  budget(config: BudgetConfig): RateBudget;
  /** The stored schedule of budget `name` (`undefined` before its first booking), read past the budget. */
  stored(name: string): Promise<Schedule | undefined>;
}

export function memoryBackend(): BudgetBackend {
  const table = new MemoryBudgetTable();
  return {
    kind: 'MemoryRateBudget',
    setup: async () => {},
    budget: ({ client: _client, ...config }) => new MemoryRateBudget({ ...config, table }),
    stored: async (name) => table.item(name),
  };
}

/** `DynamoRateBudget` on the run's dynalite, in a fresh semaphore table. */
export function dynamoBackend(): BudgetBackend & {
  client(): DynamoDBClient;
  tableName(): string;
  endpoint(): string;
} {
  let table: Awaited<ReturnType<typeof semaphoreTable>> | undefined;
  const ready = () => {
    if (table === undefined) throw new Error('dynamoBackend: setup() first');
    return table;
  };
  return {
    kind: 'DynamoRateBudget',
    setup: async () => {
      table = await semaphoreTable();
    },
    client: () => ready().client,
    endpoint: () => ready().endpoint,
    tableName: () => ready().tableName,
    budget: ({ client, ...config }) =>
      new DynamoRateBudget({ ...config, client: client ?? ready().client, tableName: ready().tableName }),
    stored: async (name) => {
      // The documented key and attributes, spelled out here rather than taken from budget-item.ts.
      const { Item } = await ready().client.send(
        new GetItemCommand({
          TableName: ready().tableName,
          Key: { pk: { S: `rate#${name}` }, sk: { S: 'schedule' } },
          ConsistentRead: true,
        }),
      );
      if (Item === undefined) return undefined;
      return {
        rate: Number(Item.rate?.N),
        freeAt: Number(Item.freeAt?.N),
        decreasedAt: Number(Item.decreasedAt?.N),
        version: Number(Item.version?.N),
        by: Item.by?.S ?? '',
      };
    },
  };
}

/** A fresh budget name, so tests sharing a table never meet. */
export const budgetName = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

/**
 * A clock that moves only when told to: `advance(ms)`, or by `backoffStepMs` each time a booking backs off
 * after a lost race (its jitter source is `random`, returning `jitter`). `backoffs` counts those.
 */
export function manualClock({ backoffStepMs = 0, jitter = 0.5, start = 1_700_000_000_000 } = {}) {
  let t = start;
  const clock = {
    backoffs: 0,
    now: () => t,
    advance: (ms: number) => {
      t += ms;
    },
    random: () => {
      clock.backoffs++;
      t += backoffStepMs;
      return jitter;
    },
  };
  return clock;
}

/** The epoch ms each of a booking's slots starts at: `writes` of them, `1000 / rate` ms apart from `startAt`. */
export function slotsOf(booking: { startAt: number; rate: number; writes: number }): number[] {
  return Array.from({ length: booking.writes }, (_, k) => booking.startAt + (k * 1000) / booking.rate);
}

/** The most slots that start in any window `[t, t + windowMs)`. */
export function peakSlots(slots: readonly number[], windowMs = 1000): number {
  const sorted = [...slots].sort((a, b) => a - b);
  let peak = 0;
  let first = 0;
  for (let last = 0; last < sorted.length; last++) {
    while (sorted[last]! - sorted[first]! >= windowMs) first++;
    peak = Math.max(peak, last - first + 1);
  }
  return peak;
}

/** Pairs of bookings whose slot spans `[startAt, endsAt)` overlap (none when no two share a slot). */
export function overlapping<B extends { startAt: number; endsAt: number }>(bookings: readonly B[]): [B, B][] {
  const sorted = [...bookings].sort((a, b) => a.startAt - b.startAt);
  const pairs: [B, B][] = [];
  for (let i = 1; i < sorted.length; i++)
    if (sorted[i]!.startAt < sorted[i - 1]!.endsAt) pairs.push([sorted[i - 1]!, sorted[i]!]);
  return pairs;
}
