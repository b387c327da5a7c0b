// Deferred records (issue 16): a tenant whose prefix's schedule is booked by other invocations past
// DEFERRAL_POLICY.turnWaitMs is re-sent to its queue as a copy delayed until its first free slot and acknowledged, so its
// invocation frees its slot;
// the copy keeps its origin's data identity (derived insert id, seq) and FIFO records are never deferred.
// An origin and its copy in one batch or across batches write one record, acknowledged.
import type { SQSRecord } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import type { IngestHandler } from '../../../lib/ingest/handler/ingest-handler.js';
import { DEFERRAL_POLICY } from '../../../lib/ingest/handler/settle/defer-out-of-turn.js';
import { DEFERRAL_ATTRIBUTES } from '../../../lib/ingest/handler/settle/deferral-port.js';
import { SqsDeferrals } from '../../../lib/ingest/handler/settle/deferral-queue.js';
import { MemoryDeferrals } from '../../../lib/ingest/handler/settle/memory-deferrals.js';
import { recordingClient } from './handler/recording-sqs.js';
import {
  body,
  failedIds,
  lambdaContext,
  memoryBudgets,
  prefixOf,
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

function setup(options: TestHandlerOptions = {}, env: Record<string, string> = {}) {
  const t = testHandler(env, options);
  handlers.push(t.handler);
  return t;
}

/** Memory budgets whose `acme` prefix is booked by another invocation for the next `ms`. */
async function acmeBookedFor(ms: number) {
  const budgets = memoryBudgets();
  const booked = await budgets.bookAhead(prefixOf('acme'), CEILING, ms);
  return { budgets, freeAt: booked.endsAt };
}

/** `S3_PREFIX_WRITE_RATE` of `testConfig`: the ceiling the handler builds its budgets with. */
const CEILING = 3500;
const acme = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ({ tenant: 'acme', id: `a-${from + i}` }));

describe('deferred records', () => {
  it('a tenant whose prefix is booked past DEFERRAL_POLICY.turnWaitMs is deferred at once, acknowledged, its copies due at its first free slot', async () => {
    const { budgets } = await acmeBookedFor(5_500);
    const deferrals = new MemoryDeferrals();
    const { handler, summaries, store } = setup({ budgets: budgets.factory, deferrals });
    const event = sqsEvent([...acme(12), { tenant: 'globex', id: 'g-1' }]);
    const started = Date.now();
    const response = await handler(event, lambdaContext(30_000));
    // Not the turn wait, nor the cutoff (28 s away): the schedule says at once when its first free slot is.
    expect(Date.now() - started).toBeLessThan(DEFERRAL_POLICY.turnWaitMs);
    expect(failedIds(response)).toEqual([]);
    const acmeIds = event.Records.slice(0, 12).map((r) => r.messageId);
    expect([...deferrals.deferred.keys()].sort()).toEqual([...acmeIds].sort());
    // Its first free slot is 5.5 s after the booking ahead: the copies come back then (whole seconds, down).
    const delays = new Set([...deferrals.deferred.values()].map((d) => d.delaySeconds));
    expect(delays.size).toBe(1);
    expect([4, 5]).toContain([...delays][0]);
    expect(summaries[0]).toMatchObject({ RecordsDeferred: 12, RecordsProcessed: 1, RecordsFailed: 0 });
    expect(store.keys().filter((k) => k.startsWith('t=acme/'))).toEqual([]);
  });

  it('without a deferral port a tenant whose prefix is booked past half its time left is redelivered at once', async () => {
    const { budgets } = await acmeBookedFor(60_000);
    const { handler, summaries, store } = setup({ budgets: budgets.factory, deferrals: false });
    const event = sqsEvent(acme(12));
    const started = Date.now();
    const response = await handler(event, lambdaContext(4_000));
    // The cutoff is 2 s away; its latest start 1 s away; the schedule is booked for a minute.
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(failedIds(response)).toEqual(event.Records.map((r) => r.messageId).sort());
    expect(summaries[0]!.RecordsDeferred).toBe(0);
    expect(summaries[0]!.splits.RecordsRedelivered).toEqual({ 'permits-unavailable': 12 });
    expect(store.keys()).toEqual([]);
  });

  it('without a deferral port a tenant waits for a first free slot within half its time left, and writes', async () => {
    const { budgets, freeAt } = await acmeBookedFor(DEFERRAL_POLICY.turnWaitMs + 500);
    const { handler, summaries } = setup({ budgets: budgets.factory, deferrals: false });
    const event = sqsEvent(acme(12));
    // The cutoff 4 s away: it may wait 2 s for its first slot.
    const response = await handler(event, lambdaContext(6_000));
    expect(failedIds(response)).toEqual([]);
    expect(Date.now()).toBeGreaterThanOrEqual(freeAt);
    expect(summaries[0]).toMatchObject({ RecordsProcessed: 12, RecordsDeferred: 0 });
  });

  it('records the port does not take, FIFO records and records at the cap are redelivered, not deferred', async () => {
    const { budgets } = await acmeBookedFor(60_000);
    const deferrals = new MemoryDeferrals();
    const refusedId = 'refused-by-port';
    deferrals.accept = (d) => d.record.messageId !== refusedId;
    const { handler, summaries } = setup({ budgets: budgets.factory, deferrals });
    const plain = acme(11).map((m) => sqsRecord(body(m)));
    const refused = sqsRecord(body({ tenant: 'acme', id: 'r' }), refusedId);
    const capped = sqsRecord(body({ tenant: 'acme', id: 'c' }));
    capped.messageAttributes[DEFERRAL_ATTRIBUTES.deferrals] = {
      dataType: 'Number',
      stringValue: '20',
      stringListValues: [],
      binaryListValues: [],
    };
    // A record at the cap makes its tenant wait like one that cannot be deferred (up to half its time
    // left), which here is still before the schedule's first free slot: the whole tenant is out of turn.
    const response = await handler(sqsEvent([...plain, refused, capped]), lambdaContext(3_000));
    expect(failedIds(response)).toEqual([refused.messageId, capped.messageId].sort());
    expect(deferrals.deferred.size).toBe(11);
    expect(summaries[0]).toMatchObject({ RecordsDeferred: 11, RecordsFailed: 2 });
    expect(summaries[0]!.splits.RecordsRedelivered).toEqual({ 'permits-unavailable': 2 });

    // A FIFO source: never deferred, redelivered.
    const fifo = acme(12, 100).map((m, i) => {
      const r = sqsRecord(body(m));
      r.eventSourceARN = 'arn:aws:sqs:us-east-1:000000000000:ingest.fifo';
      (r.attributes as SQSRecord['attributes'] & { MessageGroupId?: string }).MessageGroupId = `g-${i}`;
      return r;
    });
    const fifoResponse = await handler(sqsEvent(fifo), lambdaContext(4_000));
    expect(failedIds(fifoResponse)).toEqual(fifo.map((r) => r.messageId).sort());
    expect(deferrals.deferred.size).toBe(11);
    expect(summaries[1]!.splits.RecordsRedelivered).toEqual({ 'permits-unavailable': 12 });
  });

  it('a tenant whose records SqsDeferrals could never send waits for its slots like one that cannot be deferred', async () => {
    // Booked ahead past DEFERRAL_POLICY.turnWaitMs, but not past half the time left: the tenant gets its turn.
    const { budgets, freeAt } = await acmeBookedFor(DEFERRAL_POLICY.turnWaitMs + 500);
    const { client, calls } = recordingClient();
    const { handler, summaries } = setup({ budgets: budgets.factory, deferrals: new SqsDeferrals(client) });
    // Eight producer attributes: with origin, sent time and count the copy would carry 11 (SQS takes 10).
    const records = acme(12).map((m) => {
      const r = sqsRecord(body(m));
      for (let i = 0; i < 8; i++) r.messageAttributes[`a${i}`] = attribute('String', `v${i}`);
      return r;
    });
    const response = await handler(sqsEvent(records), lambdaContext(6_000));
    expect(failedIds(response)).toEqual([]);
    expect(Date.now()).toBeGreaterThanOrEqual(freeAt);
    expect(summaries[0]).toMatchObject({ RecordsProcessed: 12, RecordsDeferred: 0, RecordsFailed: 0 });
    expect(calls).toEqual([]);
  });

  it('SqsDeferrals taking every record of a tenant booked out of its prefix defers it', async () => {
    const { budgets } = await acmeBookedFor(60_000);
    const { client, calls } = recordingClient();
    const { handler, summaries } = setup({ budgets: budgets.factory, deferrals: new SqsDeferrals(client) });
    const event = sqsEvent(acme(12));
    const started = Date.now();
    const response = await handler(event, lambdaContext(30_000));
    // Not the cutoff (28 s away).
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(failedIds(response)).toEqual([]);
    expect(summaries[0]).toMatchObject({ RecordsDeferred: 12, RecordsProcessed: 0, RecordsFailed: 0 });
    // One copy per record, sent back to its own queue.
    expect(calls.flatMap((c) => c.entries)).toHaveLength(12);
  });

  it('a port that fails redelivers the records; the others of the batch keep their outcomes', async () => {
    const { budgets } = await acmeBookedFor(60_000);
    const { handler, summaries } = setup({
      budgets: budgets.factory,
      deferrals: {
        defer: async () => {
          throw new Error('SQS unavailable');
        },
      },
    });
    const event = sqsEvent([...acme(10), { tenant: 'globex', id: 'g' }]);
    const response = await handler(event, lambdaContext(30_000));
    expect(failedIds(response)).toEqual(
      event.Records.slice(0, 10)
        .map((r) => r.messageId)
        .sort(),
    );
    expect(summaries[0]).toMatchObject({ RecordsDeferred: 0, RecordsProcessed: 1, RecordsFailed: 10 });
  });

  it("a copy writes its origin's record: an insert without id derives it from the origin's message id", async () => {
    const { budgets } = await acmeBookedFor(60_000);
    const deferrals = new MemoryDeferrals();
    const { handler: booked, store } = setup({ budgets: budgets.factory, deferrals });
    const inserts = Array.from({ length: 10 }, (_, i) =>
      sqsRecord(body({ tenant: 'acme', op: 'insert', data: { n: i } })),
    );
    await booked(sqsEvent(inserts), lambdaContext(30_000));
    expect(deferrals.deferred.size).toBe(10);
    // The copies come back when the prefix has slots again: another container, the same bucket.
    const { handler } = setup({ store, deferrals });

    // The copies, as SQS would deliver them (new ids, the attributes SqsDeferrals sets).
    const copies = inserts.map((original) => {
      const copy = sqsRecord(original.body);
      copy.messageAttributes = {
        [DEFERRAL_ATTRIBUTES.origin]: attribute('String', original.messageId),
        [DEFERRAL_ATTRIBUTES.originSent]: attribute('Number', original.attributes.SentTimestamp),
        [DEFERRAL_ATTRIBUTES.deferrals]: attribute('Number', '1'),
      };
      return copy;
    });
    expect(failedIds(await handler(sqsEvent(copies), lambdaContext(30_000)))).toEqual([]);
    const keys = store.keys().filter((k) => k.startsWith('t=acme/'));
    expect(keys).toHaveLength(10);
    // The original delivered again (its deletion was lost): the same ten records, nothing more.
    expect(failedIds(await handler(sqsEvent(inserts), lambdaContext(30_000)))).toEqual([]);
    expect(store.keys().filter((k) => k.startsWith('t=acme/'))).toEqual(keys);
  });
});

/** The copy SqsDeferrals would send of `original`, as SQS delivers it. */
function copyOf(original: SQSRecord, deferrals = 1): SQSRecord {
  const copy = sqsRecord(original.body);
  copy.messageAttributes = {
    [DEFERRAL_ATTRIBUTES.origin]: attribute('String', original.messageId),
    [DEFERRAL_ATTRIBUTES.originSent]: attribute('Number', original.attributes.SentTimestamp),
    [DEFERRAL_ATTRIBUTES.deferrals]: attribute('Number', String(deferrals)),
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

function attribute(dataType: string, stringValue: string) {
  return { dataType, stringValue, stringListValues: [], binaryListValues: [] };
}
