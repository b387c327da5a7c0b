// Sequenced writes meeting a resource schema: whatever order the writes arrive in, the visible record is
// the one of applying them in stamp order with each invalid write refused, and an update accepted while
// its record did not exist yet never makes a valid older upsert fail.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Database } from '../../../lib/db/database.js';
import { CorruptRecordError, RecordNotFoundError, ValidationError } from '../../../lib/db/errors.js';
import { MemoryObjectStore } from '../../../lib/db/memory-object-store.js';
import type { Document } from '../../../lib/db/resource.js';
import type { SequencedWrite } from '../../../lib/db/sequenced-state.js';
import type { SequencedOutcome } from '../../../lib/db/sequenced-writer.js';

/** cdk.json's `orders`. */
const ORDERS = {
  type: 'object',
  required: ['total'],
  properties: { total: { type: 'number', minimum: 0 }, status: { type: 'string' } },
};
/** A constraint between fields, which no field can be checked against alone: a discount needs a coupon. */
const WITH_COUPONS = { ...ORDERS, dependencies: { discount: ['coupon'] } };

let buckets = 0;
async function ordersWith(
  schema: Record<string, unknown>,
  store = new MemoryObjectStore({ bucket: `seq-schema-${Date.now()}-${buckets++}` }),
) {
  const db = new Database({ tenant: 'acme', store });
  return db.createResource({ name: 'orders', schema });
}

const upsert = (seq: number, data: Document): SequencedWrite => ({
  op: 'upsert',
  stamp: { seq, tie: `m-${seq}` },
  data,
});
const update = (seq: number, data: Document): SequencedWrite => ({
  op: 'update',
  stamp: { seq, tie: `m-${seq}` },
  data,
});
const del = (seq: number): SequencedWrite => ({ op: 'delete', stamp: { seq, tie: `m-${seq}` } });

/** The user fields of a visible record, or undefined when there is none. */
async function visible(orders: Awaited<ReturnType<typeof ordersWith>>, id: string) {
  try {
    const { id: _i, createdAt: _c, updatedAt: _u, version: _v, ...fields } = await orders.get(id);
    return fields;
  } catch (err) {
    if (err instanceof RecordNotFoundError) return undefined;
    throw err;
  }
}

describe('an update that arrives before the older upsert creating its record', () => {
  const older = upsert(1000, { total: 5, status: 'new' });
  const invalid = update(2000, { total: -1 });

  it('is refused at once when its own fields fail their property schemas; the upsert is applied', async () => {
    const orders = await ordersWith(ORDERS);
    const [first] = await orders.applySequenced('late', [invalid]);
    expect(first).toMatchObject({ kind: 'rejected', error: { name: 'ValidationError', field: 'total' } });
    expect(await orders.applySequenced('late', [older])).toEqual([{ kind: 'applied' }]);
    expect(await visible(orders, 'late')).toEqual({ total: 5, status: 'new' });
  });

  it('is judged by the field keywords only: extra fields may be refused, required ones are not asked', async () => {
    const orders = await ordersWith({ ...ORDERS, additionalProperties: false });
    const [extra] = await orders.applySequenced('o-1', [update(2000, { note: 'x' })]);
    expect(extra).toMatchObject({ kind: 'rejected', error: { name: 'ValidationError', field: 'note' } });
    expect(await orders.applySequenced('o-1', [update(3000, { status: 'paid' })])).toEqual([
      { kind: 'pending' },
    ]);
    await orders.applySequenced('o-1', [older]);
    expect(await visible(orders, 'o-1')).toEqual({ total: 5, status: 'paid' });
  });

  it('ends as delivery in seq order does', async () => {
    const orders = await ordersWith(ORDERS);
    expect(await orders.applySequenced('in-order', [older])).toEqual([{ kind: 'applied' }]);
    const [second] = await orders.applySequenced('in-order', [invalid]);
    expect(second).toMatchObject({ kind: 'rejected', error: { name: 'ValidationError', field: 'total' } });
    expect(await visible(orders, 'in-order')).toEqual({ total: 5, status: 'new' });
  });

  it('that fails only merged with the upsert: the upsert is applied and the update reported refused', async () => {
    const store = new MemoryObjectStore({ bucket: `seq-schema-${Date.now()}-${buckets++}` });
    const orders = await ordersWith(WITH_COUPONS, store);
    const discount = update(2000, { discount: 5 });
    expect(await orders.applySequenced('o-1', [discount])).toEqual([{ kind: 'pending' }]);
    const [base] = await orders.applySequenced('o-1', [upsert(1000, { total: 5 })]);
    expect(base).toMatchObject({
      kind: 'applied',
      refusedUpdates: [
        {
          stamp: { seq: 2000, tie: 'm-2000' },
          data: { discount: 5 },
          error: expect.objectContaining({ name: 'ValidationError' }),
        },
      ],
    });
    expect(await visible(orders, 'o-1')).toEqual({ total: 5 });
    // A redelivery of the upsert (its letter for the update may not have been stored) reports it again,
    // in another process too (read from the store, not from this Resource's cache).
    const elsewhere = await ordersWith(WITH_COUPONS, store);
    const [again] = await elsewhere.applySequenced('o-1', [upsert(1000, { total: 5 })]);
    expect(again).toMatchObject({
      kind: 'stale',
      refusedUpdates: [
        { stamp: { seq: 2000 }, data: { discount: 5 }, error: { name: 'ValidationError', field: 'coupon' } },
      ],
    });
    // In seq order: the update is refused against the record the upsert made.
    const inOrder = await ordersWith(WITH_COUPONS);
    await inOrder.applySequenced('o-1', [upsert(1000, { total: 5 })]);
    const [refused] = await inOrder.applySequenced('o-1', [discount]);
    expect(refused).toMatchObject({ kind: 'rejected', error: expect.any(ValidationError) });
    expect(await visible(inOrder, 'o-1')).toEqual({ total: 5 });
  });

  it('keeps the pending updates the merge allows, in stamp order, and refuses the others', async () => {
    const orders = await ordersWith(WITH_COUPONS);
    await orders.applySequenced('o-1', [update(3000, { discount: 5 })]);
    await orders.applySequenced('o-1', [update(2000, { status: 'paid' })]);
    const [base] = await orders.applySequenced('o-1', [upsert(1000, { total: 5 })]);
    expect(base).toMatchObject({ kind: 'applied' });
    const refused = base !== undefined && 'refusedUpdates' in base ? base.refusedUpdates : undefined;
    expect(refused?.map((r) => r.stamp.seq)).toEqual([3000]);
    expect(await visible(orders, 'o-1')).toEqual({ total: 5, status: 'paid' });
    // A newer upsert replaces the record: nothing is left to report.
    const [next] = await orders.applySequenced('o-1', [upsert(4000, { total: 1, coupon: 'c' })]);
    expect(next).toEqual({ kind: 'applied' });
    expect(await orders.applySequenced('o-1', [update(5000, { discount: 1 })])).toEqual([
      { kind: 'applied' },
    ]);
    expect(await visible(orders, 'o-1')).toEqual({ total: 1, coupon: 'c', discount: 1 });
  });

  it('an older upsert after newer accepted updates of a visible record is applied, not refused', async () => {
    const orders = await ordersWith(WITH_COUPONS);
    await orders.applySequenced('o-1', [upsert(500, { total: 1, coupon: 'c' })]);
    await orders.applySequenced('o-1', [update(2000, { discount: 5 })]);
    // In order the upsert at 1000 drops the coupon and the update at 2000 is then refused.
    const [base] = await orders.applySequenced('o-1', [upsert(1000, { total: 5 })]);
    expect(base).toMatchObject({ kind: 'applied', refusedUpdates: [{ stamp: { seq: 2000 } }] });
    expect(await visible(orders, 'o-1')).toEqual({ total: 5 });
  });
});

describe('the refused updates a record keeps ($seq.x)', () => {
  it.each([
    ['not a list', 'x'],
    ['an entry of the wrong length', [[2000, 'm-2000', {}]]],
    ['a bad stamp', [[-5, 'm', {}, []]]],
    ['fields that are not an object', [[2000, 'm-2000', [], []]]],
    ['issues that are not a list', [[2000, 'm-2000', {}, {}]]],
  ])('malformed (%s): CorruptRecordError, nothing written', async (_, x) => {
    const store = new MemoryObjectStore({ bucket: `seq-schema-${Date.now()}-${buckets++}` });
    const orders = await ordersWith(ORDERS, store);
    const body = JSON.stringify({ id: 'o-1', version: 1, total: 1, $seq: { b: [1, 'm-1'], x } });
    await store.put({ key: orders.keyOf('o-1'), body });
    await expect(orders.applySequenced('o-1', [update(2, { total: 2 })])).rejects.toBeInstanceOf(
      CorruptRecordError,
    );
    expect((await store.get(orders.keyOf('o-1')))?.body).toBe(body);
  });
});

describe('any arrival order of sequenced writes with a schema (property)', () => {
  const totals = fc.constantFrom(-1, 0, 5);
  const writeArb = fc.oneof(
    fc.record({
      op: fc.constant('upsert' as const),
      data: fc.record({ total: totals, status: fc.constantFrom('new', 7) }, { requiredKeys: ['status'] }),
    }),
    fc.record({
      op: fc.constant('update' as const),
      data: fc.record({ total: totals, status: fc.constantFrom('paid', 9) }, { requiredKeys: [] }),
    }),
    fc.record({ op: fc.constant('delete' as const) }),
  );

  /** Whether `data` passes `ORDERS`: total a number >= 0 (required unless `partial`), status a string. */
  function valid(data: Document, partial: boolean): boolean {
    if (!partial && !('total' in data)) return false;
    if ('total' in data && !(typeof data.total === 'number' && data.total >= 0)) return false;
    return !('status' in data) || typeof data.status === 'string';
  }

  /** The reference: in seq order, each write refused when the record it makes fails the schema. */
  function inOrder(writes: readonly { op: string; data?: Document }[]) {
    let record: Document | undefined;
    const refused: number[] = [];
    writes.forEach((w, seq) => {
      if (w.op === 'delete') record = undefined;
      else if (w.op === 'upsert') {
        if (valid(w.data!, false)) record = { ...w.data };
        else refused.push(seq);
      } else if (!valid(w.data!, true)) refused.push(seq);
      else if (record !== undefined) record = { ...record, ...w.data };
    });
    return { record, refused };
  }

  it('the visible record and the refused writes are those of in-order application', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(writeArb, { minLength: 1, maxLength: 6 }),
        fc.infiniteStream(fc.nat()),
        fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 6, maxLength: 6 }),
        async (writes, shuffle, callSizes) => {
          const sequenced = writes.map((w, seq) =>
            w.op === 'delete' ? del(seq) : w.op === 'upsert' ? upsert(seq, w.data) : update(seq, w.data),
          );
          // A random arrival order, delivered in calls of 1 to 3 writes (one batch's chain each).
          const arrival = sequenced.map((_, i) => i);
          const picks = shuffle.take(arrival.length);
          for (let i = arrival.length - 1; i > 0; i--) {
            const j = picks.next().value! % (i + 1);
            [arrival[i], arrival[j]] = [arrival[j]!, arrival[i]!];
          }
          const orders = await ordersWith(ORDERS);
          const id = `p-${run++}`;
          const outcomes: SequencedOutcome[] = [];
          for (let at = 0, call = 0; at < arrival.length; call++) {
            const chunk = arrival.slice(at, at + callSizes[call % callSizes.length]!);
            const results = await orders.applySequenced(
              id,
              chunk.map((i) => sequenced[i]!),
            );
            chunk.forEach((i, k) => {
              outcomes[i] = results[k]!;
            });
            at += chunk.length;
          }
          const expected = inOrder(writes);
          expect(await visible(orders, id)).toEqual(expected.record);
          const refused = outcomes.flatMap((o, seq) => (o.kind === 'rejected' ? [seq] : []));
          expect(refused).toEqual(expected.refused);
          for (const o of outcomes) expect(o).not.toHaveProperty('refusedUpdates');
        },
      ),
      { numRuns: 200 },
    );
  });
});
