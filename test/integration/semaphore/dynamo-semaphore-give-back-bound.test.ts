// `release()` and `extend()` called without a signal are bounded by `giveBackTimeoutMs`: a stalled DynamoDB
// costs at most that, the call rejects with the bound's TimeoutError, and the lease simply expires.
import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DynamoSemaphore } from '../../../lib/semaphore/index.js';
import { localClientConfig } from '../../support/local-aws.js';
import { semaphoreTable, storedShards, totalUsed } from './support/dynamo.js';
import { startStallingProxy } from './support/stalling-proxy.js';

let tableName: string;
let dynamoEndpoint: string;
let direct: DynamoDBClient;
const cleanups: (() => Promise<void> | void)[] = [];

beforeAll(async () => {
  ({ client: direct, tableName, endpoint: dynamoEndpoint } = await semaphoreTable());
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A semaphore whose requests selected by `stall(body)` never get an answer. */
async function stalledSemaphore(stall: (body: string) => boolean) {
  const proxy = await startStallingProxy({ target: dynamoEndpoint, stall });
  cleanups.push(() => proxy.close());
  const client = new DynamoDBClient({
    ...localClientConfig('dynamodb'),
    endpoint: proxy.endpoint,
    maxAttempts: 1,
  });
  cleanups.push(() => client.destroy());
  const sem = new DynamoSemaphore({
    client,
    tableName,
    name: `bound-${randomUUID().slice(0, 8)}`,
    limit: 4,
    giveBackTimeoutMs: 300,
  });
  return { sem, proxy };
}

describe('DynamoSemaphore give-back bound', () => {
  it('a release without a signal whose request stalls rejects with a TimeoutError after giveBackTimeoutMs', async () => {
    const { sem } = await stalledSemaphore((body) => body.includes('REMOVE'));
    const lease = await sem.acquire(2);
    const started = performance.now();
    await expect(lease.release()).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    expect(totalUsed(await storedShards(direct, tableName, sem.name))).toBe(2);
  });

  it('an extend without a signal whose request stalls rejects after giveBackTimeoutMs and keeps the old expiry', async () => {
    const { sem } = await stalledSemaphore((body) => body.includes('#until = :until'));
    const lease = await sem.acquire(2);
    const expiresAt = lease.expiresAt;
    const started = performance.now();
    await expect(lease.extend(120_000)).rejects.toThrow();
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    expect(lease.expiresAt).toBe(expiresAt);
  });
});
