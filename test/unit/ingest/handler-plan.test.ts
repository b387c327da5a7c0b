import { describe, expect, it } from 'vitest';
import { planBatch } from '../../../lib/ingest/handler/plan-batch.js';
import { body, sqsRecord } from './handler/support.js';

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

  it('refuses contract violations as permanent and never throws', () => {
    const records = [sqsRecord('not json', 'bad'), sqsRecord(body({ resource: 'unknown' }), 'undeclared')];
    const plan = planBatch(records, resources);
    expect(plan.tenants).toEqual([]);
    expect(plan.unparsed.map((u) => [u.messageId, u.outcome.kind])).toEqual([
      ['bad', 'permanent'],
      ['undeclared', 'permanent'],
    ]);
  });

  it('gives the same plan for the same records (no hidden state)', () => {
    const records = [sqsRecord(body({ id: 'a' }), 'm-0'), sqsRecord('{', 'm-1')];
    expect(planBatch(records, resources)).toEqual(planBatch(records, resources));
  });
});
