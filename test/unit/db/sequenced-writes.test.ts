// Issue 15 at the store: the last-writer-wins state (a pure property), tombstones and pending partials as
// get/list/count see them, coalescing, races between writers, schema refusals inside a coalesced call.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Database } from '../../../lib/db/database.js';
import {
  ConflictError,
  RecordExistsError,
  RecordNotFoundError,
  ValidationError,
} from '../../../lib/db/errors.js';
import { MemoryObjectStore } from '../../../lib/db/memory-object-store.js';
import {
  type ObjectStore,
  PreconditionFailedError,
  type PutObjectInput,
} from '../../../lib/db/object-store.js';
import {
  applyToState,
  emptyState,
  type RecordState,
  type SequencedWrite,
  stateToJson,
} from '../../../lib/db/sequenced-state.js';
import { CONTRACT_SHARD_COUNTS } from '../../support/with-shards.js';
import { wrap } from './support/wrapped-store.js';

let buckets = 0;
const freshBucket = () => `seq-writes-${Date.now()}-${buckets++}`;

async function ordersOn(store: ObjectStore, schema?: Record<string, unknown>, shards = 1) {
  const db = new Database({ tenant: 'acme', store });
  return db.createResource({ name: 'orders', shards, ...(schema ? { schema } : {}) });
}

const stamp = (seq: number, tie = `m-${seq}`) => ({ seq, tie });
const upsert = (seq: number, data: Record<string, unknown>, tie?: string): SequencedWrite => ({
  op: 'upsert',
  stamp: stamp(seq, tie),
  data,
});
const update = (seq: number, data: Record<string, unknown>, tie?: string): SequencedWrite => ({
  op: 'update',
  stamp: stamp(seq, tie),
  data,
});
const del = (seq: number, tie?: string): SequencedWrite => ({ op: 'delete', stamp: stamp(seq, tie) });

/** What a reader sees: the user fields, or undefined for a hidden state. */
function visibleOf(state: RecordState): Record<string, unknown> | undefined {
  return state.exists ? { ...state.values } : undefined;
}

describe('the last-writer-wins state (pure)', () => {
  const writeArb = fc.record({
    op: fc.constantFrom('upsert', 'update', 'delete'),
    seq: fc.integer({ min: 0, max: 6 }),
    tie: fc.constantFrom('a', 'b', 'c'),
    data: fc.dictionary(fc.constantFrom('x', 'y', 'z'), fc.integer({ min: 0, max: 3 }), {
      minKeys: 1,
      maxKeys: 3,
    }),
  });

  it('any order and any duplication of distinct writes gives the state of in-order application', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(writeArb, { selector: (w) => `${w.seq}/${w.tie}`, maxLength: 8 }),
        fc.array(fc.nat(), { maxLength: 20 }),
        (writes, picks) => {
          const seqWrites: SequencedWrite[] = writes.map((w) =>
            w.op === 'delete' ? del(w.seq, w.tie) : { op: w.op, stamp: stamp(w.seq, w.tie), data: w.data },
          );
          // Reference: in stamp order, an update of a missing record does nothing.
          const ordered = [...writes].sort((p, q) => p.seq - q.seq || (p.tie < q.tie ? -1 : 1));
          let expected: Record<string, unknown> | undefined;
          for (const w of ordered) {
            if (w.op === 'upsert') expected = { ...w.data };
            else if (w.op === 'update') expected = expected && { ...expected, ...w.data };
            else expected = undefined;
          }
          // Delivery: the picked ones (repeats allowed) first, then every write once more, reversed.
          const delivery = [
            ...picks.map((i) => seqWrites[i % Math.max(1, seqWrites.length)]!),
            ...seqWrites.reverse(),
          ];
          const state = emptyState();
          for (const w of delivery.filter(Boolean)) applyToState(state, w, 'now');
          expect(visibleOf(state)).toEqual(expected);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('says what each write did: applied, stale, pending, exists', () => {
    const state = emptyState();
    expect(applyToState(state, update(5, { b: 2 }), 't')).toBe('pending');
    expect(applyToState(state, upsert(3, { a: 1, b: 1 }), 't')).toBe('applied');
    expect(visibleOf(state)).toEqual({ a: 1, b: 2 });
    expect(applyToState(state, upsert(3, { a: 1, b: 1 }), 't')).toBe('stale');
    expect(applyToState(state, update(4, { b: 9 }), 't')).toBe('stale');
    expect(applyToState(state, { op: 'insert', stamp: stamp(9), data: { a: 1 } }, 't')).toBe('exists');
    expect(applyToState(state, del(6), 't')).toBe('applied');
    expect(applyToState(state, update(5, { c: 1 }), 't')).toBe('stale');
    expect(stateToJson('o-1', state)).toMatchObject({ $seq: { h: 1, b: [6, 'm-6'] } });
  });
});

describe.each(CONTRACT_SHARD_COUNTS)('Resource.applySequenced, %i shard(s)', (shards) => {
  const shardedOn = (store: ObjectStore, schema?: Record<string, unknown>) => ordersOn(store, schema, shards);

  it('tombstones: invisible to get, list and count, and an older upsert cannot resurrect the record', async () => {
    const store = new MemoryObjectStore({ bucket: freshBucket() });
    const orders = await shardedOn(store);
    await orders.applySequenced('o-1', [upsert(1, { a: 1 })]);
    await orders.applySequenced('o-2', [upsert(1, { a: 2 })]);
    expect(await orders.applySequenced('o-1', [del(5)])).toEqual([{ kind: 'applied' }]);
    expect(await orders.applySequenced('o-1', [upsert(3, { a: 3 })])).toEqual([{ kind: 'stale' }]);
    await expect(orders.get('o-1')).rejects.toBeInstanceOf(RecordNotFoundError);
    expect((await orders.list()).items.map((r) => r.id)).toEqual(['o-2']);
    expect(await orders.count()).toBe(1);
    expect(await orders.get('o-2')).not.toHaveProperty('$seq');
    // The tombstone is tagged for the lifecycle rule; records are not.
    expect(store.objects.objects.get(orders.keyOf('o-1'))?.tags).toEqual({ 's3-ingest-state': 'hidden' });
    expect(store.objects.objects.get(orders.keyOf('o-2'))?.tags).toBeUndefined();
    // A newer upsert brings it back; a plain insert may take over a tombstone's key too.
    await orders.applySequenced('o-1', [upsert(7, { a: 7 })]);
    expect(await orders.get('o-1')).toMatchObject({ a: 7 });
    await orders.applySequenced('o-3', [del(1)]);
    await expect(orders.insert({ a: 3 }, { id: 'o-3' })).resolves.toMatchObject({ id: 'o-3', a: 3 });
    await expect(orders.insert({ a: 4 }, { id: 'o-3' })).rejects.toBeInstanceOf(RecordExistsError);
  });

  it('count: even-sized objects are records, odd ones are told apart with one HEAD each', async () => {
    const store = new MemoryObjectStore({ bucket: freshBucket() });
    const orders = await shardedOn(store);
    await orders.applySequenced('live', [upsert(1, { a: 1 })]);
    await orders.applySequenced('gone', [del(1)]);
    await orders.applySequenced('waiting', [update(1, { a: 1 })]);
    // A record written before the parity rule, with an odd size.
    const legacy = JSON.stringify({ id: 'legacy', createdAt: 'x', updatedAt: 'x', version: 1, n: 1 });
    await store.put({
      key: orders.keyOf('legacy'),
      body: Buffer.byteLength(legacy) % 2 ? legacy : `${legacy} `,
    });
    let heads = 0;
    const counting = wrap(store, {
      head: (key) => {
        heads++;
        return store.head(key);
      },
    });
    expect(await (await shardedOn(counting)).count()).toBe(2);
    expect(heads).toBe(3);
  });

  it('coalesces: writes to one record are one PUT of their merged effect, each with its own outcome', async () => {
    const store = new MemoryObjectStore({ bucket: freshBucket() });
    let puts = 0;
    const counting = wrap(store, {
      put: (input) => {
        puts++;
        return store.put(input);
      },
    });
    const orders = await shardedOn(counting, {
      type: 'object',
      properties: { a: { type: 'integer' }, b: { type: 'integer' } },
    });
    const outcomes = await orders.applySequenced('o-1', [
      update(4, { b: 4 }),
      upsert(2, { a: 2 }),
      update(3, { b: 'three' }),
      upsert(1, { a: 1 }),
      update(5, { a: 5 }),
    ]);
    // In stamp order: upsert 1, upsert 2 (replaces it), update 3 (refused: b must be an integer), 4, 5.
    expect(outcomes.map((o) => o.kind)).toEqual(['applied', 'applied', 'rejected', 'applied', 'applied']);
    expect(outcomes[2]).toMatchObject({ error: expect.any(ValidationError) });
    expect(puts).toBe(1);
    expect(await orders.get('o-1')).toMatchObject({ a: 5, b: 4, version: 4 });
    expect(await orders.applySequenced('o-1', [update(4, { b: 4 })])).toEqual([{ kind: 'stale' }]);
    expect(puts).toBe(1);
  });

  it('two writers racing on one record lose nothing: the loser re-reads and decides again', async () => {
    const bucket = freshBucket();
    const a = await shardedOn(new MemoryObjectStore({ bucket }));
    const b = await shardedOn(new MemoryObjectStore({ bucket }));
    await a.applySequenced('o-1', [upsert(1, { base: true })]);
    await b.applySequenced('o-1', [update(2, { fromB: 1 })]);
    // Two writers (two containers), each applying its writes one after the other, at the same time.
    const writer = async (orders: typeof a, parity: number) => {
      for (let i = parity; i < 20; i += 2)
        await orders.applySequenced('o-1', [update(10 + i, { [`f${i}`]: i, last: i })]);
    };
    await Promise.all([writer(a, 0), writer(b, 1)]);
    const record = await a.get('o-1');
    expect(record).toMatchObject({ base: true, fromB: 1, last: 19 });
    for (let i = 0; i < 20; i++) expect(record[`f${i}`]).toBe(i);
  });

  it("drops the store's fields from user data and stores `__proto__` as a plain field", async () => {
    const orders = await shardedOn(new MemoryObjectStore({ bucket: freshBucket() }));
    const data = JSON.parse(
      '{"a":1,"id":"forged","version":99,"$seq":{"h":1},"__proto__":{"polluted":true}}',
    );
    await orders.applySequenced('o-1', [
      upsert(1, data),
      update(2, JSON.parse('{"__proto__":{"x":1},"version":7}')),
    ]);
    const record = await orders.get('o-1');
    expect(record).toMatchObject({ id: 'o-1', a: 1, version: 2 });
    expect(record).not.toHaveProperty('$seq');
    expect(Object.getPrototypeOf(record)).toBe(Object.prototype);
    expect(Object.hasOwn(record, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('gives up with ConflictError after MAX_SEQUENCED_ROUNDS lost races', async () => {
    const store = new MemoryObjectStore({ bucket: freshBucket() });
    const always412 = wrap(store, {
      put: async (input: PutObjectInput) => {
        throw new PreconditionFailedError(input.key, 'if-match');
      },
    });
    const orders = await shardedOn(always412);
    await expect(orders.applySequenced('o-1', [upsert(1, { a: 1 })])).rejects.toBeInstanceOf(ConflictError);
  });
});
