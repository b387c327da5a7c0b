// An older upsert and a newer update of a record that does not exist yet, with a resource schema, in both
// arrival orders across two batches, through the real handler on the embedded stack (S3, rejected queue):
// both orders end as seq order does. The upsert's record is visible, the update is refused with a schema
// reason and its message, and the upsert is never dead-lettered.
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database } from '../../../lib/db/database.js';
import { S3ObjectStore } from '../../../lib/db/s3-object-store.js';
import { createIngestHandler, type IngestHandler } from '../../../lib/ingest/handler/ingest-handler.js';
import type { LocalResources } from '../../../lib/local/emulators/provision.js';
import { localClientConfig } from '../../support/local-aws.js';
import {
  body,
  lambdaContext,
  quietMetrics,
  silentLogger,
  sqsRecord,
  type TestMessage,
} from '../../unit/ingest/handler/support.js';
import { readDlq } from './dlq.js';
import { provisionFresh, stackConfig, useTestCredentials } from './emulated-stack.js';

useTestCredentials();

/** cdk.json's `orders`, and `carts`: the same with a discount that needs a coupon (a cross-field rule). */
const ORDERS = {
  type: 'object',
  required: ['total'],
  properties: { total: { type: 'number', minimum: 0 }, status: { type: 'string' } },
};
const CARTS = { ...ORDERS, dependencies: { discount: ['coupon'] } };

const sqs = new SQSClient(localClientConfig('sqs'));
const s3 = new S3Client(localClientConfig('s3'));
let r: LocalResources;
let handler: IngestHandler;
let db: Database;

beforeAll(async () => {
  r = await provisionFresh('merge');
  const config = stackConfig(r, {
    RESOURCES: JSON.stringify({ orders: ORDERS, carts: CARTS }),
    WRITE_TIMEOUT_MS: '1000',
  });
  handler = createIngestHandler(config, { logger: silentLogger(), metrics: quietMetrics() });
  db = new Database({ tenant: 'acme', store: new S3ObjectStore(s3, r.bucket) });
  await db.createResource({ name: 'orders' });
  await db.createResource({ name: 'carts' });
});

afterAll(async () => {
  await handler?.close();
  sqs.destroy();
  s3.destroy();
});

/** Each record in a batch of its own, in the order given; every one must be acknowledged. */
async function deliver(records: readonly SQSRecord[]): Promise<void> {
  for (const record of records) {
    const response = await handler({ Records: [record] }, lambdaContext(30_000));
    expect(response.batchItemFailures).toEqual([]);
  }
}

async function fieldsOf(resource: string, id: string) {
  const {
    id: _i,
    createdAt: _c,
    updatedAt: _u,
    version: _v,
    ...fields
  } = await db.resource(resource).get(id);
  return fields;
}

const orders = ['upsert first', 'update first'] as const;

describe.each(orders)('an older upsert and a newer update of a new record, %s', (order) => {
  function pair(resource: string, id: string, update: TestMessage['data']) {
    const upsert = sqsRecord(
      body({ resource, op: 'upsert', id, seq: 1000, data: { total: 5, status: 'new' } }),
    );
    const newer = sqsRecord(body({ resource, op: 'update', id, seq: 2000, data: update }));
    return { upsert, update: newer, delivery: order === 'upsert first' ? [upsert, newer] : [newer, upsert] };
  }

  it('an update whose field fails the schema: refused with its message, the upsert written', async () => {
    const id = `neg-${order.split(' ')[0]}`;
    const { upsert, update, delivery } = pair('orders', id, { total: -1 });
    await deliver(delivery);
    expect(await fieldsOf('orders', id)).toEqual({ total: 5, status: 'new' });
    const letters = await readDlq(sqs, r.dlqUrl);
    expect(letters.get(update.messageId)).toMatchObject({
      body: update.body,
      attributes: { reason: 'schema-violation', errorName: 'ValidationError', tenant: 'acme' },
    });
    expect(letters.get(update.messageId)?.attributes.detail).toContain('total');
    expect(letters.has(upsert.messageId)).toBe(false);
    expect(letters.size).toBe(1);
  });

  it('an update valid alone that the record refuses: refused with its message, the upsert written', async () => {
    const id = `disc-${order.split(' ')[0]}`;
    const { upsert, update, delivery } = pair('carts', id, { discount: 5 });
    await deliver(delivery);
    expect(await fieldsOf('carts', id)).toEqual({ total: 5, status: 'new' });
    const letters = await readDlq(sqs, r.dlqUrl);
    const letter = letters.get(update.messageId);
    expect(letter?.attributes).toMatchObject({ reason: 'schema-violation', errorName: 'ValidationError' });
    expect(JSON.parse(letter!.body)).toEqual(JSON.parse(update.body));
    // Routable by `dlq redrive`: the queue it came through (its tenant's, as its reporter's) is named.
    expect(letter?.attributes.sourceQueueArn).toBe(update.eventSourceARN);
    expect(letters.has(upsert.messageId)).toBe(false);
    expect(letters.size).toBe(1);
  });
});
