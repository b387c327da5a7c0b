// A resize whose answer is lost on the wire (dynalite behind the fault proxy, the real SDK and its own
// retries): the first attempt lands, the SDK's retry of the same request then fails its condition (the
// entry no longer holds the count it names). The release must still give back the resized count.
import { randomUUID } from 'node:crypto';
import { DynamoDBClient as Client, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FaultProxy, startFaultProxy } from '../../../lib/local/faults/fault-proxy.js';
import { AdaptiveDynamoSemaphore } from '../../../lib/semaphore/index.js';
import { localClientConfig } from '../../support/local-aws.js';
import { semaphoreTable, storedAdaptiveShards } from './support/dynamo.js';

let direct: DynamoDBClient;
let tableName: string;
let proxy: FaultProxy;
let throughProxy: DynamoDBClient;

beforeAll(async () => {
  let endpoint: string;
  ({ client: direct, tableName, endpoint } = await semaphoreTable());
  proxy = await startFaultProxy({ service: 'dynamodb', target: endpoint });
  throughProxy = new Client({ ...localClientConfig('dynamodb'), endpoint: proxy.endpoint });
});
afterAll(async () => {
  throughProxy?.destroy();
  await proxy?.stop();
});

/** A resize's `UpdateItem`: it moves the capacity and the lease's entry to `:to` in one write. */
const isResize = (body: string) => /"UpdateExpression":"SET #capacity = #capacity \+ :delta\b/.test(body);

describe('AdaptiveLease.resize with its answer lost (fault proxy, SDK retries)', () => {
  it('the SDK retry fails its condition after the first attempt landed: the release gives back the resized count', async () => {
    const name = `lost-resize-${randomUUID().slice(0, 8)}`;
    // 100/s at an assumed 40 ms, no slack: 4 permits in all; a holder measuring 60 ms rescales x1.5 to 6.
    const semaphore = new AdaptiveDynamoSemaphore({
      client: throughProxy,
      tableName,
      name,
      limit: 50,
      adaptive: { ratePerSecond: 100, initialLatencyMs: 40 },
    });
    const lease = await semaphore.acquire(10, { min: 1 });
    expect(lease.permits).toBe(4);
    proxy.setRules([
      { name: 'resize answer lost', match: (c) => isResize(c.body), fault: 'unknown-outcome', times: 1 },
    ]);
    // The lease keeps what it knows for sure; the entry holds the resized count.
    expect(await lease.resize!({ succeeded: 10, throttled: 0, attemptMs: 600, writes: 10 })).toBe(4);
    expect(proxy.injected()).toEqual({ 'resize answer lost': 1 });
    const resizes = proxy.calls().filter((c) => isResize(c.call.body));
    expect(resizes.map((c) => c.fault)).toEqual(['unknown-outcome', undefined]);
    expect(resizes[1]?.upstreamStatus).toBe(400); // the retry: ConditionalCheckFailedException
    expect(await storedAdaptiveShards(direct, tableName, name)).toMatchObject([{ capacity: 6, held: 6 }]);

    await lease.release();
    expect(await storedAdaptiveShards(direct, tableName, name)).toMatchObject([
      { capacity: 6, free: 6, held: 0 },
    ]);
  });
});
