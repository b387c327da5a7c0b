// A stalled DynamoDB must not hold the adaptive semaphore's caller past its signal, and an abandoned call
// rejects with the reason the caller (or the give-back bound) aborted for, not the SDK's own AbortError.
import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AdaptiveDynamoSemaphore } from '../../../lib/semaphore/index.js';
import { localClientConfig } from '../../support/local-aws.js';
import { semaphoreTable } from './support/dynamo.js';
import { type StallingProxy, startStallingProxy } from './support/stalling-proxy.js';

let tableName: string;
let dynamoEndpoint: string;
const cleanups: (() => Promise<void> | void)[] = [];

beforeAll(async () => {
  ({ tableName, endpoint: dynamoEndpoint } = await semaphoreTable());
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A client through a proxy that stalls the requests `stall(body)` selects (no SDK retries). */
async function stallingClient(stall: (body: string) => boolean): Promise<{
  client: DynamoDBClient;
  stalled: StallingProxy;
}> {
  const stalled = await startStallingProxy({ target: dynamoEndpoint, stall });
  const client = new DynamoDBClient({
    ...localClientConfig('dynamodb'),
    endpoint: stalled.endpoint,
    maxAttempts: 1,
  });
  cleanups.push(
    () => stalled.close(),
    () => client.destroy(),
  );
  return { client, stalled };
}

const semaphore = (client: DynamoDBClient) =>
  new AdaptiveDynamoSemaphore({
    client,
    tableName,
    name: `adaptive-stall-${randomUUID().slice(0, 8)}`,
    limit: 10,
    adaptive: { ratePerSecond: 200, initialLatencyMs: 20 },
    giveBackTimeoutMs: 200,
  });

const isExtend = (body: string) => body.includes('#until = :until');
const isGiveBack = (body: string) => body.includes('REMOVE #holders.#lease SET #free');

describe('AdaptiveDynamoSemaphore against a stalled DynamoDB', () => {
  it("an extend whose request stalls rejects with its signal's reason and keeps the old expiry", async () => {
    const { client, stalled } = await stallingClient(isExtend);
    const lease = await semaphore(client).acquire(2);
    const expiresAt = lease.expiresAt;
    const controller = new AbortController();
    const extending = lease.extend(120_000, { signal: controller.signal });
    await stalled.nextStall();
    const reason = new Error('extend budget spent');
    controller.abort(reason);
    await expect(extending).rejects.toBe(reason);
    expect(lease.expiresAt).toBe(expiresAt);
  });

  it('an extend without a signal whose request stalls rejects with a TimeoutError after giveBackTimeoutMs', async () => {
    const { client } = await stallingClient(isExtend);
    const lease = await semaphore(client).acquire(2);
    const started = performance.now();
    await expect(lease.extend(120_000)).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(performance.now() - started).toBeGreaterThanOrEqual(190);
  });

  it("a release whose request stalls rejects with its signal's reason; without one, a TimeoutError", async () => {
    const { client, stalled } = await stallingClient(isGiveBack);
    const sem = semaphore(client);
    const lease = await sem.acquire(2);
    const controller = new AbortController();
    const releasing = lease.release({ signal: controller.signal });
    await stalled.nextStall();
    const reason = new Error('release budget spent');
    controller.abort(reason);
    await expect(releasing).rejects.toBe(reason);
    // A failed release may be retried: the next call sends the give-back again.
    await expect(lease.release()).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(stalled.stalledCount).toBe(2);
  });
});
