// Deferred copies keep their origin's data identity: an origin and its copy (or a later copy) in one batch or
// across batches write one record, acknowledged; a copy older than a newer write does not overwrite it.
import type { SQSRecord } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import {
  DEFERRALS_ATTRIBUTE,
  ORIGIN_ATTRIBUTE,
  ORIGIN_SENT_ATTRIBUTE,
} from '../../../lib/ingest/handler/deferral-port.js';
import type { IngestHandler } from '../../../lib/ingest/handler/ingest-handler.js';
import {
  body,
  failedIds,
  lambdaContext,
  sqsEvent,
  sqsRecord,
  type TestHandlerOptions,
  type TestMessage,
  testHandler,
} from './handler/support.js';

const handlers: IngestHandler[] = [];
afterEach(async () => {
  await Promise.all(handlers.splice(0).map((h) => h.close()));
});

function setup(options: TestHandlerOptions = {}) {
  const t = testHandler({}, options);
  handlers.push(t.handler);
  return t;
}

function attribute(dataType: string, stringValue: string) {
  return { dataType, stringValue, stringListValues: [], binaryListValues: [] };
}

/** The copy SqsDeferrals would send of `original`, as SQS delivers it. */
function copyOf(original: SQSRecord, deferrals = 1): SQSRecord {
  const copy = sqsRecord(original.body);
  copy.messageAttributes = {
    [ORIGIN_ATTRIBUTE]: attribute('String', original.messageId),
    [ORIGIN_SENT_ATTRIBUTE]: attribute('Number', original.attributes.SentTimestamp),
    [DEFERRALS_ATTRIBUTE]: attribute('Number', String(deferrals)),
  };
  return copy;
}

const cases: [string, TestMessage][] = [
  ['insert without id', { op: 'insert', data: { n: 1 } }],
  ['insert with key', { op: 'insert', key: 'k-1', data: { n: 1 } }],
  ['insert with explicit id', { op: 'insert', id: 'x-1', data: { n: 1 } }],
  ['upsert', { op: 'upsert', id: 'u-1', data: { n: 1 } }],
];

describe('origin and copy', () => {
  for (const [label, message] of cases) {
    it(`${label}: origin and copy in one batch are both acknowledged, one record`, async () => {
      const { handler, store, summaries } = setup();
      const original = sqsRecord(body(message));
      const copy = copyOf(original);
      expect(failedIds(await handler(sqsEvent([original, copy]), lambdaContext(30_000)))).toEqual([]);
      expect(store.keys().filter((k) => k.startsWith('t=acme/'))).toHaveLength(1);
      expect(summaries[0]).toMatchObject({ RecordsProcessed: 2, RecordsDeadLettered: 0 });
    });
    it(`${label}: copy first, origin later (across batches): both acknowledged, one record`, async () => {
      const { handler, store, summaries } = setup();
      const original = sqsRecord(body(message));
      const copy = copyOf(original);
      expect(failedIds(await handler(sqsEvent([copy]), lambdaContext(30_000)))).toEqual([]);
      expect(failedIds(await handler(sqsEvent([original]), lambdaContext(30_000)))).toEqual([]);
      expect(failedIds(await handler(sqsEvent([copyOf(original, 2)]), lambdaContext(30_000)))).toEqual([]);
      expect(store.keys().filter((k) => k.startsWith('t=acme/'))).toHaveLength(1);
      expect(summaries.map((s) => s.RecordsDeadLettered)).toEqual([0, 0, 0]);
    });
  }

  it('a newer update written between the origin and its copy is not overwritten by the copy', async () => {
    const { handler, store } = setup();
    await handler(sqsEvent([body({ op: 'insert', id: 'o-1', data: { v: 0 } })]), lambdaContext(30_000));
    const older = sqsRecord(body({ op: 'update', id: 'o-1', data: { v: 1 } }));
    const newer = sqsRecord(body({ op: 'update', id: 'o-1', data: { v: 2 } }));
    expect(failedIds(await handler(sqsEvent([newer]), lambdaContext(30_000)))).toEqual([]);
    expect(failedIds(await handler(sqsEvent([copyOf(older)]), lambdaContext(30_000)))).toEqual([]);
    const [key] = store.keys().filter((k) => k.startsWith('t=acme/'));
    expect(JSON.stringify(store.record(key!))).toContain('"v":2');
  });

  it('a delete copy and its origin in one batch', async () => {
    const { handler, store } = setup();
    await handler(sqsEvent([body({ op: 'insert', id: 'd-1', data: { v: 0 } })]), lambdaContext(30_000));
    const del = sqsRecord(body({ op: 'delete', id: 'd-1' }));
    const response = await handler(sqsEvent([del, copyOf(del)]), lambdaContext(30_000));
    expect(failedIds(response)).toEqual([]);
    const [key] = store.keys().filter((k) => k.startsWith('t=acme/'));
    expect(JSON.stringify(store.record(key!))).not.toContain('"v":');
    // The copy delivered again later: still deleted, acknowledged.
    expect(failedIds(await handler(sqsEvent([copyOf(del, 2)]), lambdaContext(30_000)))).toEqual([]);
    expect(JSON.stringify(store.record(key!))).not.toContain('"v":');
  });
});
