// SEMAPHORE_TABLE alone caps a tenant prefix fleet-wide with the rate schedule (docs/fleet-cap.md): the
// handler with no ports given books a large tenant's slots in the prefix's `rate#<name>` item, and a small
// tenant's writes book none.
import { DynamoDBClient, GetItemCommand, ScanCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createIngestHandler, type IngestHandler } from '../../../lib/ingest/handler/ingest-handler.js';
import { localClientConfig } from '../../support/local-aws.js';
import {
  body,
  failedIds,
  lambdaContext,
  quietMetrics,
  silentLogger,
  sqsEvent,
} from '../../unit/ingest/handler/support.js';
import { provisionFresh, stackConfig, useTestCredentials } from './emulated-stack.js';

const dynamodb = new DynamoDBClient(localClientConfig('dynamodb'));
const handlers: IngestHandler[] = [];

useTestCredentials();
afterEach(async () => {
  await Promise.all(handlers.splice(0).map((h) => h.close()));
});
afterAll(() => dynamodb.destroy());

describe('SEMAPHORE_TABLE with no ports given', () => {
  it("a large tenant books its prefix's slots in the rate# item; a small tenant books none", async () => {
    const r = await provisionFresh('rate-item');
    const handler = createIngestHandler(
      stackConfig(r, { S3_PREFIX_WRITE_RATE: '200', WRITE_TIMEOUT_MS: '1000' }),
      {
        logger: silentLogger(),
        metrics: quietMetrics(),
      },
    );
    handlers.push(handler);
    const records = (tenant: string, n: number) =>
      Array.from({ length: n }, (_, i) => body({ tenant, id: `${tenant}-${i}` }));
    const before = Date.now();
    const response = await handler(
      sqsEvent([...records('hot', 10), ...records('cold', 2)]),
      lambdaContext(10_000),
    );
    expect(failedIds(response)).toEqual([]);
    const item = async (tenant: string) =>
      (
        await dynamodb.send(
          new GetItemCommand({
            TableName: r.tableName,
            Key: { pk: { S: `rate#prefix:${r.bucket}/t=${tenant}/` }, sk: { S: 'schedule' } },
            ConsistentRead: true,
          }),
        )
      ).Item;
    const hot = await item('hot');
    // At S3_PREFIX_WRITE_RATE, its 10 slots booked from now on (50 ms at 200/s), then reported.
    expect(hot?.rate?.N).toBe('200');
    expect(Number(hot?.freeAt?.N)).toBeGreaterThanOrEqual(before + 50);
    expect(Number(hot?.version?.N)).toBeGreaterThanOrEqual(1);
    expect(await item('cold')).toBeUndefined();
  });

  it("a tenant writing only a sharded resource books one stripe's rate# item per invocation, the stripes spread", async () => {
    const r = await provisionFresh('rate-stripes');
    const handler = createIngestHandler(
      stackConfig(r, {
        S3_PREFIX_WRITE_RATE: '200',
        WRITE_TIMEOUT_MS: '1000',
        RESOURCE_SHARDS: '{"orders":4}',
      }),
      { logger: silentLogger(), metrics: quietMetrics() },
    );
    handlers.push(handler);
    for (let batch = 0; batch < 8; batch++) {
      const records = Array.from({ length: 10 }, (_, i) => body({ tenant: 'whale', id: `w-${batch}-${i}` }));
      expect(failedIds(await handler(sqsEvent(records), lambdaContext(10_000)))).toEqual([]);
    }
    const { Items = [] } = await dynamodb.send(
      new ScanCommand({ TableName: r.tableName, ConsistentRead: true }),
    );
    const keys = Items.map((item) => item.pk?.S ?? '');
    const stripe = new RegExp(`^rate#prefix:${r.bucket}/t=whale/s=\\*/stripe=([0-3])of4$`);
    // Only stripe items: no booking in the tenant prefix's item.
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) expect(key).toMatch(stripe);
    // Eight bookings at random over four stripes: more than one stripe (all in one: 4 x 0.25^8 = 6e-5).
    expect(new Set(keys).size).toBeGreaterThan(1);
    // Each stripe was created at its share of the prefix's rate (200 / 4): the four start inside one prefix's
    // limit. A booking queued behind the last one's slots may double it per second since (slow start): in
    // the test's ~2 s, never to the ceiling.
    for (const item of Items) {
      expect(Number(item.rate?.N)).toBeGreaterThanOrEqual(50);
      expect(Number(item.rate?.N)).toBeLessThan(200);
    }
  });
});
