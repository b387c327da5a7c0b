import { describe, expect, it } from 'vitest';
import { parseRecord, planBatch } from '../../../../../lib/ingest/handler/plan/plan-batch.js';
import { DEFERRAL_ATTRIBUTES } from '../../../../../lib/ingest/handler/settle/deferral-port.js';
import { body, sqsRecord } from '../support.js';

const resources = { orders: {}, customers: {} };

describe('planBatch (pure)', () => {
  it('groups writes by tenant in first-seen order and chains them per record in message order', () => {
    const records = [
      sqsRecord(body({ tenant: 'b', id: 'x', op: 'upsert', data: { n: 1 } }), 'm-0'),
      sqsRecord(body({ tenant: 'a', id: 'x', op: 'upsert', data: { n: 2 } }), 'm-1'),
      sqsRecord(body({ tenant: 'b', id: 'x', op: 'update', data: { n: 3 } }), 'm-2'),
      sqsRecord(body({ tenant: 'b', resource: 'customers', id: 'x', data: { n: 4 } }), 'm-3'),
    ];
    const plan = planBatch(records, resources);
    expect(plan.unparsed).toEqual([]);
    expect(plan.tenants.map((t) => [t.tenant, t.writes])).toEqual([
      ['b', 3],
      ['a', 1],
    ]);
    const b = plan.tenants[0]!;
    expect(b.chains.map((chain) => chain.map((w) => w.messageId))).toEqual([['m-0', 'm-2'], ['m-3']]);
  });

  it('orders chains by their first write priority, stable for equal ones', () => {
    const priorities = [10, 90, 50, 90, 0];
    const records = priorities.map((priority, i) => sqsRecord(body({ id: `r-${i}`, priority }), `m-${i}`));
    const plan = planBatch(records, resources);
    expect(plan.tenants[0]!.chains.map((c) => c[0]!.messageId)).toEqual(['m-1', 'm-3', 'm-2', 'm-0', 'm-4']);
  });

  it('among equal priorities, the records SQS delivered most often go first (they are closest to the DLQ)', () => {
    const receives = [1, 4, 2, 4, 1];
    const records = receives.map((n, i) => {
      const record = sqsRecord(body({ id: `r-${i}` }), `m-${i}`);
      return { ...record, attributes: { ...record.attributes, ApproximateReceiveCount: String(n) } };
    });
    // Another record's second write brings its chain's receives up: a chain counts its most received write.
    const later = sqsRecord(body({ id: 'r-4', op: 'update', data: { n: 2 } }), 'm-5');
    records.push({ ...later, attributes: { ...later.attributes, ApproximateReceiveCount: '3' } });
    // A higher priority still goes first, however fresh.
    records.push(sqsRecord(body({ id: 'urgent', priority: 90 }), 'm-6'));
    const plan = planBatch(records, resources);
    expect(plan.tenants[0]!.chains.map((c) => c.map((w) => w.messageId))).toEqual([
      ['m-6'],
      ['m-1'],
      ['m-3'],
      ['m-4', 'm-5'],
      ['m-2'],
      ['m-0'],
    ]);
    // The tenant's plan carries how often its most received record came back.
    expect(plan.tenants[0]!.receives).toBe(4);
    expect(planBatch([sqsRecord(body({ id: 'fresh' }), 'm-9')], resources).tenants[0]!.receives).toBe(1);
  });

  it('refuses contract violations as permanent and never throws', () => {
    const records = [sqsRecord('not json', 'bad'), sqsRecord(body({ resource: 'unknown' }), 'undeclared')];
    const plan = planBatch(records, resources);
    expect(plan.tenants).toEqual([]);
    expect(plan.unparsed.map((u) => [u.messageId, u.outcome.kind])).toEqual([
      ['bad', 'permanent'],
      ['undeclared', 'permanent'],
    ]);
  });

  it('an exception that is not a contract violation is a bug of ours: redelivered, never dead-lettered', () => {
    // A record without a message id makes the parser throw a TypeError (a programming error).
    const unparsed = parseRecord(sqsRecord(body({ id: 'a' }), ''), resources);
    expect(unparsed).toEqual({
      messageId: '',
      outcome: { kind: 'transient', cause: 'unexpected', error: expect.any(TypeError) },
    });
  });

  it('a record without attributes parses, ordered as the oldest write', () => {
    const { attributes: _attributes, ...bare } = sqsRecord(body({ id: 'a' }), 'm-0');
    expect(parseRecord(bare as never, resources)).toMatchObject({
      id: 'a',
      seq: 0,
      seqSource: 'sent-timestamp',
    });
  });

  it('a message delivered twice in one batch (same message id) is planned once', () => {
    const record = sqsRecord(body({ id: 'a' }), 'm-0');
    const plan = planBatch(
      [record, sqsRecord(body({ id: 'b' }), 'm-1'), { ...record, receiptHandle: 'rh-2' }],
      resources,
    );
    expect(plan.tenants[0]!.writes).toBe(2);
    expect(plan.tenants[0]!.chains.flat().map((w) => w.messageId)).toEqual(['m-0', 'm-1']);
  });

  it('FIFO: a message redelivered at plan time holds back the later messages of its group, not of others', () => {
    const fifo = (messageBody: string, messageId: string, group: string) => {
      const r = sqsRecord(messageBody, messageId);
      return {
        ...r,
        eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:ingest.fifo',
        attributes: { ...r.attributes, MessageGroupId: group },
      };
    };
    const plan = planBatch(
      [
        fifo(body({ id: 'a' }), '', 'g-1'), // a parse bug of ours: redelivered
        fifo(body({ id: 'b' }), 'm-1', 'g-1'),
        fifo(body({ id: 'c' }), 'm-2', 'g-2'),
        fifo('not json', 'm-3', 'g-2'), // permanent: dead-lettered, blocks nothing
        fifo(body({ id: 'd' }), 'm-4', 'g-2'),
      ],
      resources,
    );
    expect(
      plan.unparsed.map((u) => [
        u.messageId,
        u.outcome.kind,
        'cause' in u.outcome ? u.outcome.cause : u.outcome.reason,
      ]),
    ).toEqual([
      ['', 'transient', 'unexpected'],
      ['m-1', 'transient', 'earlier-write-failed'],
      ['m-3', 'permanent', 'invalid-json'],
    ]);
    expect(plan.tenants[0]!.chains.flat().map((w) => w.messageId)).toEqual(['m-2', 'm-4']);
  });

  it("a deferred copy keeps its origin's data identity; the ledger still knows it by its own id", () => {
    const copy = sqsRecord(body({ op: 'insert', data: { n: 1 } }), 'copy-1');
    copy.attributes.SentTimestamp = '1700000009999';
    copy.messageAttributes = {
      [DEFERRAL_ATTRIBUTES.origin]: {
        dataType: 'String',
        stringValue: 'origin-1',
        stringListValues: [],
        binaryListValues: [],
      },
      [DEFERRAL_ATTRIBUTES.originSent]: {
        dataType: 'Number',
        stringValue: '1700000000000',
        stringListValues: [],
        binaryListValues: [],
      },
      [DEFERRAL_ATTRIBUTES.deferrals]: {
        dataType: 'Number',
        stringValue: '3',
        stringListValues: [],
        binaryListValues: [],
      },
    };
    const original = sqsRecord(body({ op: 'insert', data: { n: 1 } }), 'origin-1');
    original.attributes.SentTimestamp = '1700000000000';
    const write = parseRecord(copy, resources);
    const first = parseRecord(original, resources);
    expect(write).toMatchObject({ messageId: 'copy-1', originId: 'origin-1', seq: 1_700_000_000_000_000 });
    expect('id' in write && 'id' in first && write.id === first.id).toBe(true);
    expect(first).not.toHaveProperty('originId');
    const plan = planBatch([copy, sqsRecord(body({ id: 'other' }), 'm-2')], resources);
    expect(plan.tenants[0]).toMatchObject({ deferrals: 3, ordered: false });
    expect(planBatch([sqsRecord(body({ id: 'z' }), 'm-3')], resources).tenants[0]).toMatchObject({
      deferrals: 0,
    });
  });

  it('a tenant with a FIFO message group is ordered (its records are never deferred)', () => {
    const fifo = sqsRecord(body({ id: 'f' }), 'm-f');
    fifo.eventSourceARN = 'arn:aws:sqs:us-east-1:000000000000:ingest.fifo';
    (fifo.attributes as typeof fifo.attributes & { MessageGroupId: string }).MessageGroupId = 'g';
    expect(planBatch([fifo], resources).tenants[0]!.ordered).toBe(true);
    // One such record among standard ones (two sources) orders the whole tenant.
    const standard = sqsRecord(body({ id: 's' }), 'm-s');
    expect(planBatch([standard, fifo], resources).tenants[0]!.ordered).toBe(true);
    expect(planBatch([standard], resources).tenants[0]!.ordered).toBe(false);
  });

  it('a receive count that is missing, unreadable or below 1 counts as one receive', () => {
    for (const count of [undefined, '', 'many', '0', '-2', '0.5', 'Infinity']) {
      const record = sqsRecord(body({ id: 'r' }), 'm-r');
      const attributes = { ...record.attributes, ApproximateReceiveCount: count };
      const plan = planBatch([{ ...record, attributes } as typeof record], resources);
      expect(plan.tenants[0]!.receives).toBe(1);
    }
    const twice = sqsRecord(body({ id: 'r' }), 'm-r');
    const plan = planBatch(
      [{ ...twice, attributes: { ...twice.attributes, ApproximateReceiveCount: '2' } }],
      resources,
    );
    expect(plan.tenants[0]!.receives).toBe(2);
  });

  it('gives the same plan for the same records (no hidden state)', () => {
    const records = [sqsRecord(body({ id: 'a' }), 'm-0'), sqsRecord('{', 'm-1')];
    expect(planBatch(records, resources)).toEqual(planBatch(records, resources));
  });
});
