import { randomUUID } from 'node:crypto';
import { type DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import {
  DynamoRateBudget,
  MemoryBudgetTable,
  MemoryRateBudget,
  type RateBudget,
} from '../../../../lib/semaphore/index.js';
import { semaphoreTable } from './dynamo.js';

/** A budget item as stored, read straight from where the budget keeps it. */
export interface StoredBudget {
  budget: number;
  free: number;
  decreasedAt: number;
  holders: Record<string, { r: number; until: number; at: number; due?: number }>;
  /** The sum of the holders' rates. */
  held: number;
}

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
  /** The stored item of budget `name` (`undefined` before its first take). */
  stored(name: string): Promise<StoredBudget | undefined>;
}

const held = (holders: StoredBudget['holders']) => Object.values(holders).reduce((sum, h) => sum + h.r, 0);

export function memoryBackend(): BudgetBackend {
  const table = new MemoryBudgetTable();
  return {
    kind: 'MemoryRateBudget',
    setup: async () => {},
    budget: ({ client: _client, ...config }) => new MemoryRateBudget({ ...config, table }),
    stored: async (name) => {
      const item = table.item(name);
      if (item === undefined) return undefined;
      const holders = Object.fromEntries(item.holders);
      return {
        budget: item.budget,
        free: item.free,
        decreasedAt: item.decreasedAt,
        holders,
        held: held(holders),
      };
    },
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
      const { Item } = await ready().client.send(
        new GetItemCommand({
          TableName: ready().tableName,
          Key: { pk: { S: `rate#${name}` }, sk: { S: 'budget' } },
          ConsistentRead: true,
        }),
      );
      if (Item === undefined) return undefined;
      const holders = Object.fromEntries(
        Object.entries(Item.holders!.M!).map(([fence, v]) => [
          fence,
          {
            r: Number(v.M!.r!.N),
            until: Number(v.M!.until!.N),
            at: Number(v.M!.at!.N),
            ...(v.M!.due === undefined ? {} : { due: Number(v.M!.due.N) }),
          },
        ]),
      );
      return {
        budget: Number(Item.budget!.N),
        free: Number(Item.free!.N),
        decreasedAt: Number(Item.decreasedAt!.N),
        holders,
        held: held(holders),
      };
    },
  };
}

/** A fresh budget name, so tests sharing a table never meet. */
export const budgetName = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

/**
 * A clock that moves only when told to: `advance(ms)`, or by `backoffStepMs` each time a waiter backs off
 * (its jitter source is `random`, returning `jitter`; 0 re-reads at once). `backoffs` counts those.
 */
export function manualClock({ backoffStepMs = 0, jitter = 0.5 } = {}) {
  let t = 1_700_000_000_000;
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
