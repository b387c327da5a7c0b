import type { SQSRecord } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import type { IngestHandler } from '../../../lib/ingest/handler/ingest-handler.js';
import {
  body,
  failedIds,
  internalError,
  keyOf,
  lambdaContext,
  sqsRecord,
  type TestMessage,
  testHandler,
} from './handler/support.js';

const handlers: IngestHandler[] = [];
afterEach(async () => {
  await Promise.all(handlers.splice(0).map((h) => h.close()));
});

function setup() {
  const t = testHandler();
  handlers.push(t.handler);
  return t;
}

/** A record as a FIFO queue delivers it: with its group (and a sequence number). */
function fifoRecord(group: string, message: TestMessage | string, seq: number): SQSRecord {
  const record = sqsRecord(typeof message === 'string' ? message : body(message), `m-${seq}`);
  return {
    ...record,
    attributes: { ...record.attributes, MessageGroupId: group, SequenceNumber: String(seq) },
    eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:ingest.fifo',
  };
}

describe('FIFO partial batch responses (AWS: after a failure, the rest of its group is returned too)', () => {
  it('returns and does not apply the later messages of a group after a transient failure, even for other records', async () => {
    const { handler, store } = setup();
    store.hook = (call) => {
      if (call.kind === 'put' && call.key === keyOf('acme', 'orders', 'o-2')) throw internalError();
    };
    const records = [
      fifoRecord('g1', { id: 'o-1' }, 1),
      fifoRecord('g1', { id: 'o-2' }, 2),
      fifoRecord('g1', { id: 'o-3' }, 3),
      fifoRecord('g2', { id: 'o-4' }, 4),
      fifoRecord('g1', { id: 'o-1', data: { total: 9 } }, 5),
    ];
    const response = await handler({ Records: records }, lambdaContext(30_000));
    expect(failedIds(response)).toEqual(['m-2', 'm-3', 'm-5']);
    // o-3 is another record: on a standard queue it would be written; in its group it must wait for o-2.
    expect(store.keys()).toEqual([keyOf('acme', 'orders', 'o-1'), keyOf('acme', 'orders', 'o-4')]);
    expect(store.record(keyOf('acme', 'orders', 'o-1'))).toMatchObject({ total: 1 });
  });

  it('applies a group one message at a time, in order, across records', async () => {
    const { handler, store } = setup();
    const order: string[] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    store.hook = async (call) => {
      if (call.kind !== 'put') return;
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      order.push(call.key);
      await new Promise((resolve) => setImmediate(resolve));
      inFlight--;
    };
    const ids = ['o-1', 'o-2', 'o-3', 'o-4', 'o-5'];
    const records = ids.map((id, i) => fifoRecord('g', { id }, i + 1));
    const response = await handler({ Records: records }, lambdaContext(30_000));
    expect(response.batchItemFailures).toEqual([]);
    expect(order).toEqual(ids.map((id) => keyOf('acme', 'orders', id)));
    expect(maxInFlight).toBe(1);
  });

  it('does not dead-letter a bad message that follows a redelivered one in its group', async () => {
    const { handler, store, deadLetters } = setup();
    store.hook = (call) => {
      if (call.kind === 'put' && call.key === keyOf('acme', 'orders', 'o-1')) throw internalError();
    };
    const records = [
      fifoRecord('g1', { id: 'o-1' }, 1),
      fifoRecord('g1', '{not json', 2),
      fifoRecord('g2', '{not json either', 3),
    ];
    const response = await handler({ Records: records }, lambdaContext(30_000));
    expect(failedIds(response)).toEqual(['m-1', 'm-2']);
    expect([...deadLetters.letters.keys()]).toEqual(['m-3']);
    expect(deadLetters.letters.get('m-3')).toMatchObject({ reason: 'invalid-json', messageGroupId: 'g2' });
  });

  it('dead-letters a bad message before the failure, and files its letter under its group', async () => {
    const { handler, store, deadLetters } = setup();
    store.hook = (call) => {
      if (call.kind === 'put' && call.key === keyOf('acme', 'orders', 'o-2')) throw internalError();
    };
    const records = [fifoRecord('g1', '{not json', 1), fifoRecord('g1', { id: 'o-2' }, 2)];
    const response = await handler({ Records: records }, lambdaContext(30_000));
    expect(failedIds(response)).toEqual(['m-2']);
    expect(deadLetters.letters.get('m-1')).toMatchObject({ reason: 'invalid-json', messageGroupId: 'g1' });
  });

  it('redelivers the rest of a group from its first change of tenant (tenants cannot be ordered)', async () => {
    const { handler, store, summaries } = setup();
    const records = [
      fifoRecord('g', { tenant: 'acme', id: 'o-1' }, 1),
      fifoRecord('g', { tenant: 'globex', id: 'o-2' }, 2),
      fifoRecord('g', { tenant: 'acme', id: 'o-3' }, 3),
      fifoRecord('h', { tenant: 'globex', id: 'o-4' }, 4),
    ];
    const response = await handler({ Records: records }, lambdaContext(30_000));
    expect(failedIds(response)).toEqual(['m-2', 'm-3']);
    expect(store.keys()).toEqual([keyOf('acme', 'orders', 'o-1'), keyOf('globex', 'orders', 'o-4')]);
    expect(summaries[0]?.splits.RecordsRedelivered).toEqual({ 'earlier-write-failed': 2 });
  });

  it('ignores the group id of a standard (fair) queue: it orders nothing there', async () => {
    const { handler, store } = setup();
    store.hook = (call) => {
      if (call.kind === 'put' && call.key === keyOf('acme', 'orders', 'o-1')) throw internalError();
    };
    const fair = (id: string, seq: number) => ({
      ...fifoRecord('g', { id }, seq),
      eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:ingest',
    });
    const response = await handler({ Records: [fair('o-1', 1), fair('o-2', 2)] }, lambdaContext(30_000));
    expect(failedIds(response)).toEqual(['m-1']);
    expect(store.keys()).toEqual([keyOf('acme', 'orders', 'o-2')]);
  });

  it('keeps standard-queue records independent (no group: another record is not held back)', async () => {
    const { handler, store } = setup();
    store.hook = (call) => {
      if (call.kind === 'put' && call.key === keyOf('acme', 'orders', 'o-1')) throw internalError();
    };
    const records = [sqsRecord(body({ id: 'o-1' }), 's-1'), sqsRecord(body({ id: 'o-2' }), 's-2')];
    const response = await handler({ Records: records }, lambdaContext(30_000));
    expect(failedIds(response)).toEqual(['s-1']);
    expect(store.keys()).toEqual([keyOf('acme', 'orders', 'o-2')]);
  });
});
