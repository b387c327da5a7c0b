// One run of `npm run bench:semaphore`, in its own process: `holders` concurrent holders book one prefix's
// schedule for `durationMs` (book, then report the round), counting every DynamoDB request they send.
import { DynamoDBClient, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import {
  DynamoRateBudget,
  MemoryBudgetTable,
  MemoryRateBudget,
  type RateBudget,
} from '../../lib/semaphore/index.js';
import { reportToParent } from '../support/child.js';

export interface HoldersConfig {
  /**
   * `dynamo`: DynamoRateBudget, a client per holder as per Lambda container. `memory`: MemoryRateBudget on one
   * shared table. `floor`: a strongly consistent GetItem and an unconditional UpdateItem per booking on the
   * same item, no condition and no backoff: what the emulator allows a booking's two requests at all.
   */
  engine: 'dynamo' | 'memory' | 'floor';
  endpoint: string;
  tableName: string;
  name: string;
  ceiling: number;
  holders: number;
  writesPerBooking: number;
  durationMs: number;
}

export interface HoldersResult {
  bookings: number;
  elapsedMs: number;
  bookP50Ms: number;
  bookP99Ms: number;
  reads: number;
  writes: number;
  conditionalFailures: number;
  /** Pairs of bookings, consecutive by start, whose slots overlap (0 when no two share a slot). */
  overlaps: number;
  /** The stored schedule's version after the run (writes that landed on it); undefined for the floor. */
  storedVersion?: number;
}

const config = JSON.parse(process.argv[2] ?? '{}') as HoldersConfig;
const counts = { reads: 0, writes: 0, conditionalFailures: 0 };

function countingClient(): DynamoDBClient {
  const client = new DynamoDBClient({
    endpoint: config.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  // Counts each request as sent: a failed conditional write still consumes write capacity on DynamoDB.
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'GetItemCommand') counts.reads++;
      else counts.writes++;
      try {
        return await next(args);
      } catch (err) {
        if ((err as Error).name === 'ConditionalCheckFailedException') counts.conditionalFailures++;
        throw err;
      }
    },
    { step: 'initialize', name: 'countDynamoCalls' },
  );
  return client;
}

/** Not a budget: a booking's read and write with no condition, each holder moving `freeAt` on its own. */
function floorBudget(): RateBudget {
  const client = countingClient();
  const Key = { pk: { S: `floor#${config.name}` }, sk: { S: 'schedule' } };
  return {
    name: config.name,
    ceiling: config.ceiling,
    async book({ writes }) {
      const { Item } = await client.send(
        new GetItemCommand({ TableName: config.tableName, Key, ConsistentRead: true }),
      );
      const now = Date.now();
      const startAt = Math.max(now, Number(Item?.freeAt?.N ?? 0));
      const endsAt = startAt + (writes * 1000) / config.ceiling;
      await client.send(
        new UpdateItemCommand({
          TableName: config.tableName,
          Key,
          UpdateExpression: 'SET freeAt = :f',
          ExpressionAttributeValues: { ':f': { N: String(endsAt) } },
        }),
      );
      const view = { rate: config.ceiling, decreasedAt: 0 };
      return {
        rate: config.ceiling,
        startAt,
        endsAt,
        writes,
        bookedAt: now,
        queued: startAt > now,
        step: async () => view,
        report: async () => {},
      };
    },
  };
}

const memoryTable = new MemoryBudgetTable();
const newBudget: Record<HoldersConfig['engine'], () => RateBudget> = {
  dynamo: () =>
    new DynamoRateBudget({
      client: countingClient(),
      tableName: config.tableName,
      name: config.name,
      ceiling: config.ceiling,
    }),
  memory: () => new MemoryRateBudget({ name: config.name, ceiling: config.ceiling, table: memoryTable }),
  floor: floorBudget,
};
const budgets = Array.from({ length: config.holders }, newBudget[config.engine]);

/** Books the holder's writes on a schedule that may run far ahead (demand above the budget). */
const book = (budget: RateBudget) =>
  budget.book({
    writes: config.writesPerBooking,
    latestStart: Date.now() + 3_600_000,
    writeBy: Date.now() + 36_000_000,
  });

// Warm-up: creates the item and each holder's connection; the counters start afterwards.
for (const budget of budgets) await book(budget);
Object.assign(counts, { reads: 0, writes: 0, conditionalFailures: 0 });

const latencies: number[] = [];
const slots: { startAt: number; endsAt: number }[] = [];
const started = performance.now();
const stopAt = started + config.durationMs;
async function holder(budget: RateBudget): Promise<void> {
  while (performance.now() < stopAt) {
    const t0 = performance.now();
    const booking = await book(budget);
    latencies.push(performance.now() - t0);
    slots.push({ startAt: booking.startAt, endsAt: booking.endsAt });
    // The writes' round, as a holder reports it once its writes have settled: nothing refused.
    await booking.report({ accepted: booking.writes, throttled: 0, starved: booking.queued });
    // A memory budget's booking never leaves the microtask queue: let the other holders' timers run.
    await new Promise((resolve) => setImmediate(resolve));
  }
}
await Promise.all(budgets.map(holder));
const elapsedMs = performance.now() - started;

slots.sort((a, b) => a.startAt - b.startAt);
const overlaps = slots.filter((s, i) => i > 0 && s.startAt < slots[i - 1]!.endsAt).length;
latencies.sort((a, b) => a - b);

/** The schedule's version as stored, read past the budgets (and their request counts). */
async function storedVersion(): Promise<number | undefined> {
  if (config.engine === 'memory') return memoryTable.item(config.name)?.version;
  if (config.engine === 'floor') return undefined;
  const reader = new DynamoDBClient({
    endpoint: config.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  const { Item } = await reader.send(
    new GetItemCommand({
      TableName: config.tableName,
      Key: { pk: { S: `rate#${config.name}` }, sk: { S: 'schedule' } },
      ConsistentRead: true,
    }),
  );
  return Item?.version?.N === undefined ? undefined : Number(Item.version.N);
}
const quantile = (q: number) =>
  latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
reportToParent<HoldersResult>({
  bookings: latencies.length,
  elapsedMs,
  bookP50Ms: quantile(0.5),
  bookP99Ms: quantile(0.99),
  ...counts,
  overlaps,
  storedVersion: await storedVersion(),
});
process.exit(0);
