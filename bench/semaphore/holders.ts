// One contention level of `npm run bench:semaphore`, in its own process: `holders` concurrent holders run
// acquire -> hold -> release cycles for `durationMs` against one semaphore, counting every DynamoDB call.
import { DynamoDBClient, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { DynamoSemaphore, MemorySemaphore, type Semaphore } from '../../lib/semaphore/index.js';
import { reportToParent } from '../support/child.js';

export interface HoldersConfig {
  /** `raw`: two plain UpdateItem calls per cycle on the same items, the floor any DynamoDB design pays. */
  engine: 'dynamo' | 'memory' | 'raw';
  endpoint: string;
  tableName: string;
  name: string;
  limit: number;
  shards: number;
  holders: number;
  k: number;
  holdMs: number;
  durationMs: number;
}

export interface HoldersResult {
  cycles: number;
  elapsedMs: number;
  acquireP50Ms: number;
  acquireP99Ms: number;
  writes: number;
  conditionalFailures: number;
  reads: number;
  permitsPerAcquire: number;
}

const config = JSON.parse(process.argv[2] ?? '{}') as HoldersConfig;
const counts = { writes: 0, conditionalFailures: 0, reads: 0 };
const writeCommands = new Set(['UpdateItemCommand', 'PutItemCommand', 'DeleteItemCommand']);

function countingClient(): DynamoDBClient {
  const client = new DynamoDBClient({
    endpoint: config.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  // Counts each call as sent (a failed conditional write still consumes write capacity on DynamoDB).
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (writeCommands.has(context.commandName ?? '')) counts.writes++;
      else counts.reads++;
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

function dynamoSemaphore(): Semaphore {
  return new DynamoSemaphore({
    client: countingClient(),
    tableName: config.tableName,
    name: config.name,
    limit: config.limit,
    shards: config.shards,
  });
}

/** Not a semaphore: a counter write to take and one to give back, unconditional, no waiting (the floor). */
function rawWrites(): Semaphore {
  const client = countingClient();
  const bump = (shard: number, by: number) =>
    client.send(
      new UpdateItemCommand({
        TableName: config.tableName,
        Key: { pk: { S: `raw#${config.name}` }, sk: { S: `shard#${shard}` } },
        UpdateExpression: 'ADD used :by',
        ExpressionAttributeValues: { ':by': { N: String(by) } },
      }),
    );
  return {
    name: config.name,
    limit: config.limit,
    async acquire(k) {
      const shard = Math.floor(Math.random() * config.shards);
      await bump(shard, k);
      return {
        permits: k,
        fence: 'raw',
        expiresAt: Number.POSITIVE_INFINITY,
        release: async () => {
          await bump(shard, -k);
        },
        extend: async () => undefined,
      };
    },
  };
}

const engines = {
  dynamo: dynamoSemaphore,
  raw: rawWrites,
  memory: () => new MemorySemaphore({ limit: config.limit }),
};
const semaphore: Semaphore = engines[config.engine]();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// Warm-up creates the shard items and the client's connections; counters restart afterwards.
await (await semaphore.acquire(1)).release();
Object.assign(counts, { writes: 0, conditionalFailures: 0, reads: 0 });

const latencies: number[] = [];
let permitsGranted = 0;
const started = performance.now();
const stopAt = started + config.durationMs;
async function holder(): Promise<void> {
  while (performance.now() < stopAt) {
    const t0 = performance.now();
    const lease = await semaphore.acquire(config.k, { min: 1, deadline: Date.now() + 30_000 });
    latencies.push(performance.now() - t0);
    permitsGranted += lease.permits;
    if (config.holdMs > 0) await sleep(config.holdMs);
    await lease.release();
  }
}
await Promise.all(Array.from({ length: config.holders }, holder));
const elapsedMs = performance.now() - started;

latencies.sort((a, b) => a - b);
const quantile = (q: number) =>
  latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
reportToParent<HoldersResult>({
  cycles: latencies.length,
  elapsedMs,
  acquireP50Ms: quantile(0.5),
  acquireP99Ms: quantile(0.99),
  ...counts,
  permitsPerAcquire: permitsGranted / latencies.length,
});
process.exit(0);
