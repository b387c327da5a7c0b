// A stalled DynamoDB must not hold an acquire or a release past the caller's signal: every request carries it.
import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DynamoSemaphore } from '../../../lib/semaphore/index.js';
import { localClientConfig } from '../../support/local-aws.js';
import { semaphoreTable, storedShards, totalUsed } from './support/dynamo.js';
import { type StallingProxy, startStallingProxy } from './support/stalling-proxy.js';

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

/** A client through `proxy` (no SDK retries, so a stall is one request). */
function clientVia(proxy: StallingProxy): DynamoDBClient {
  const client = new DynamoDBClient({
    ...localClientConfig('dynamodb'),
    endpoint: proxy.endpoint,
    maxAttempts: 1,
  });
  cleanups.push(() => client.destroy());
  return client;
}

async function proxy(stall?: (body: string) => boolean): Promise<StallingProxy> {
  const p = await startStallingProxy(stall === undefined ? {} : { target: dynamoEndpoint, stall });
  cleanups.push(() => p.close());
  return p;
}

const semaphore = (client: DynamoDBClient) =>
  new DynamoSemaphore({
    client,
    tableName,
    name: `stall-${randomUUID().slice(0, 8)}`,
    limit: 4,
    giveBackTimeoutMs: 200,
  });

describe('DynamoSemaphore against a stalled DynamoDB', () => {
  it('an acquire whose request stalls rejects with the signal reason as soon as the signal aborts', async () => {
    const stalled = await proxy();
    const sem = semaphore(clientVia(stalled));
    const controller = new AbortController();
    const reason = new Error('invocation cutoff');
    const acquiring = sem.acquire(2, { signal: controller.signal });
    await stalled.nextStall();
    controller.abort(reason);
    await expect(acquiring).rejects.toBe(reason);
  });

  it('a release whose request stalls rejects when its signal aborts; the lease still holds until it expires', async () => {
    // Takes pass, give-backs (REMOVE of the holder entry) stall.
    const stalled = await proxy((body) => body.includes('REMOVE'));
    const sem = semaphore(clientVia(stalled));
    const lease = await sem.acquire(3);
    const controller = new AbortController();
    const releasing = lease.release({ signal: controller.signal });
    await stalled.nextStall();
    const reason = new Error('release budget spent');
    controller.abort(reason);
    await expect(releasing).rejects.toBe(reason);
    expect(totalUsed(await storedShards(direct, tableName, sem.name))).toBe(3);
  });

  it('an acquire aborted after a take landed gives the take back (a fresh bound, not the aborted signal)', async () => {
    // The blind take lands on shard 0; the survey for the rest (Query) stalls; the caller aborts.
    const stalled = await proxy((body) => body.includes('KeyConditionExpression'));
    const sem = new DynamoSemaphore({
      client: clientVia(stalled),
      tableName,
      name: `stall-${randomUUID().slice(0, 8)}`,
      limit: 4,
      shards: 2,
      random: () => 0,
    });
    await new DynamoSemaphore({ client: direct, tableName, name: sem.name, limit: 4, shards: 2 })
      .acquire(1)
      .then((l) => l.release()); // creates both shard items
    const controller = new AbortController();
    const acquiring = sem.acquire(4, { signal: controller.signal });
    await stalled.nextStall();
    expect(totalUsed(await storedShards(direct, tableName, sem.name))).toBe(2);
    const reason = new Error('cutoff');
    controller.abort(reason);
    await expect(acquiring).rejects.toBe(reason);
    expect(totalUsed(await storedShards(direct, tableName, sem.name))).toBe(0);
  });

  it('a release without a signal whose request stalls rejects with a TimeoutError after giveBackTimeoutMs', async () => {
    const stalled = await proxy((body) => body.includes('REMOVE'));
    const sem = semaphore(clientVia(stalled));
    const lease = await sem.acquire(2);
    const started = performance.now();
    await expect(lease.release()).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
    expect(totalUsed(await storedShards(direct, tableName, sem.name))).toBe(2);
  });

  it('an extend without a signal whose request stalls rejects after giveBackTimeoutMs and keeps the old expiry', async () => {
    const stalled = await proxy((body) => body.includes('#until = :until'));
    const sem = semaphore(clientVia(stalled));
    const lease = await sem.acquire(2);
    const expiresAt = lease.expiresAt;
    const started = performance.now();
    await expect(lease.extend(120_000)).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
    expect(lease.expiresAt).toBe(expiresAt);
  });

  it("an extend whose request stalls rejects with its signal's reason (as release does), not the SDK's AbortError", async () => {
    const stalled = await proxy((body) => body.includes('#until = :until'));
    const sem = semaphore(clientVia(stalled));
    const lease = await sem.acquire(2);
    const expiresAt = lease.expiresAt;
    const controller = new AbortController();
    const extending = lease.extend(120_000, { signal: controller.signal });
    await stalled.nextStall();
    const reason = new Error('extend budget spent');
    controller.abort(reason);
    await expect(extending).rejects.toBe(reason);
    expect(lease.expiresAt).toBe(expiresAt);
  });
});
