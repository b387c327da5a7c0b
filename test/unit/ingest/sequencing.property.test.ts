// Issue 15, the invariant: whatever SQS does (any delivery order, duplicates, redelivery after partial
// failures, two containers writing the same records at once), the final state of every record equals
// applying each distinct message once, in (seq, message id) order. Through the real handler on memory://.
import { S3ServiceException } from '@aws-sdk/client-s3';
import type { SQSRecord } from 'aws-lambda';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { Database } from '../../../lib/db/database.js';
import { RecordNotFoundError } from '../../../lib/db/errors.js';
import { MemoryObjectStore } from '../../../lib/db/memory-object-store.js';
import type { IngestHandler } from '../../../lib/ingest/handler/ingest-handler.js';
import { lambdaContext, sqsRecord, TrackingStore, testHandler } from './handler/support.js';

type Fields = Record<string, number>;

interface Message {
  readonly messageId: string;
  readonly record: string;
  readonly op: 'upsert' | 'update' | 'delete';
  readonly data: Fields;
  /** Explicit `seq`, or undefined: the handler orders it by SentTimestamp x 1000. */
  readonly seq: number | undefined;
  readonly sentTimestamp: number;
}

const RECORDS = ['r-0', 'r-1', 'r-2'];

const fieldsArb = fc.dictionary(fc.constantFrom('a', 'b', 'c', 'd'), fc.integer({ min: 0, max: 9 }), {
  minKeys: 1,
  maxKeys: 3,
});

const messageArb = fc.record({
  record: fc.constantFrom(...RECORDS),
  op: fc.constantFrom('upsert', 'update', 'update', 'delete') as fc.Arbitrary<Message['op']>,
  data: fieldsArb,
  // Small ranges on purpose: equal seqs (ties broken by message id) are common.
  seq: fc.option(fc.integer({ min: 0, max: 12 }), { nil: undefined }),
  sentTimestamp: fc.integer({ min: 0, max: 12 }),
});

const historyArb = fc
  .array(messageArb, { minLength: 1, maxLength: 14 })
  .map((ms) => ms.map((m, i): Message => ({ ...m, messageId: `m-${String(i).padStart(2, '0')}` })));

function effectiveSeq(m: Message): number {
  return m.seq ?? m.sentTimestamp * 1000;
}

/** The reference: each message once, in (seq, message id) order; an update of a missing record does nothing. */
function expectedState(messages: readonly Message[], record: string): Fields | undefined {
  const ordered = messages
    .filter((m) => m.record === record)
    .sort((x, y) => effectiveSeq(x) - effectiveSeq(y) || (x.messageId < y.messageId ? -1 : 1));
  let state: Fields | undefined;
  for (const m of ordered) {
    if (m.op === 'upsert') state = { ...m.data };
    else if (m.op === 'update') state = state === undefined ? undefined : { ...state, ...m.data };
    else state = undefined;
  }
  return state;
}

function toSqsRecord(m: Message): SQSRecord {
  const body = JSON.stringify({
    v: 1,
    tenant: 'acme',
    resource: 'orders',
    op: m.op,
    id: m.record,
    ...(m.op === 'delete' ? {} : { data: m.data }),
    ...(m.seq === undefined ? {} : { seq: m.seq }),
  });
  const record = sqsRecord(body, m.messageId);
  return { ...record, attributes: { ...record.attributes, SentTimestamp: String(m.sentTimestamp) } };
}

function internalError(): S3ServiceException {
  return new S3ServiceException({
    name: 'InternalError',
    $fault: 'server',
    $metadata: { httpStatusCode: 500 },
    message: 'injected',
  });
}

/** One delivery round: a batch for each of the two containers (indices into the history, repeats allowed). */
const roundArb = fc.record({
  a: fc.array(fc.nat(), { maxLength: 10 }),
  b: fc.array(fc.nat(), { maxLength: 10 }),
});

const handlers: IngestHandler[] = [];
afterEach(async () => {
  await Promise.all(handlers.splice(0).map((h) => h.close()));
});

async function visible(bucket: string): Promise<Map<string, Record<string, unknown>>> {
  const db = new Database({ tenant: 'acme', store: new MemoryObjectStore({ bucket }) });
  const orders = await db.createResource({ name: 'orders' });
  const out = new Map<string, Record<string, unknown>>();
  for (const id of RECORDS) {
    try {
      const { id: _i, createdAt: _c, updatedAt: _u, version: _v, ...fields } = await orders.get(id);
      out.set(id, fields);
    } catch (err) {
      if (!(err instanceof RecordNotFoundError)) throw err;
    }
  }
  // list and count agree with get: tombstones and pending partials are invisible to all three.
  const listed = (await orders.list({ limit: 1000 })).items.map((r) => r.id).sort();
  expect(listed).toEqual([...out.keys()].sort());
  expect(await orders.count()).toBe(out.size);
  return out;
}

describe('sequenced writes through the handler (fast-check)', () => {
  it('final state == in-order application, under reordering, duplicates, failures and two containers', async () => {
    await fc.assert(
      fc.asyncProperty(
        historyArb,
        fc.array(roundArb, { maxLength: 6 }),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 16 }),
        async (history, rounds, failurePattern) => {
          const store = new TrackingStore();
          let calls = 0;
          let failing = true;
          store.hook = (call) => {
            // Transient S3 failures on reads and writes while `failing`, following the generated pattern.
            if (failing && failurePattern[calls++ % failurePattern.length] === true) throw internalError();
            void call;
          };
          const a = testHandler({}, { store });
          const b = testHandler({}, { store });
          handlers.push(a.handler, b.handler);
          const acknowledged = new Set<string>();
          const deliver = async (h: IngestHandler, picks: readonly Message[]) => {
            if (picks.length === 0) return;
            const response = await h({ Records: picks.map(toSqsRecord) }, lambdaContext(30_000));
            const failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
            for (const m of picks) if (!failed.has(m.messageId)) acknowledged.add(m.messageId);
          };
          const pick = (indices: readonly number[]) => indices.map((i) => history[i % history.length]!);
          for (const round of rounds) {
            await Promise.all([deliver(a.handler, pick(round.a)), deliver(b.handler, pick(round.b))]);
          }
          // Then SQS keeps redelivering what was not acknowledged, in reverse order, until all is.
          for (let pass = 0; acknowledged.size < history.length; pass++) {
            if (pass === 3) failing = false;
            const rest = history.filter((m) => !acknowledged.has(m.messageId)).reverse();
            const half = Math.ceil(rest.length / 2);
            await Promise.all([
              deliver(a.handler, rest.slice(0, half)),
              deliver(b.handler, rest.slice(half)),
            ]);
            expect(pass).toBeLessThan(10);
          }
          expect(a.deadLetters.letters.size + b.deadLetters.letters.size).toBe(0);
          const stored = await visible(store.bucket);
          for (const record of RECORDS) {
            expect(stored.get(record), record).toEqual(expectedState(history, record));
          }
        },
      ),
      { numRuns: 60 },
    );
  }, 120_000);
});
