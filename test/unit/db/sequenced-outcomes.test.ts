// What each write of `Resource.applySequenced` comes to when it is refused, repeated or raced: a refused
// write is `rejected` whatever its stamp, an insert repeated with the same content (any key order, nested)
// is `stale` and one with other content is `rejected`, a validator bug fails the call instead of rejecting
// a write, and a call that keeps losing races gives up after MAX_SEQUENCED_ROUNDS PUTs with a
// ConflictError naming the ETag it read.
import { describe, expect, it } from 'vitest';
import { Database } from '../../../lib/db/database.js';
import {
  ConflictError,
  CorruptRecordError,
  RecordExistsError,
  ValidationError,
} from '../../../lib/db/errors.js';
import { MemoryObjectStore } from '../../../lib/db/memory-object-store.js';
import {
  type ObjectStore,
  PreconditionFailedError,
  type PutObjectInput,
} from '../../../lib/db/object-store.js';
import { Resource } from '../../../lib/db/resource.js';
import { HIDDEN_METADATA, type SequencedWrite } from '../../../lib/db/sequenced-state.js';
import { MAX_SEQUENCED_ROUNDS } from '../../../lib/db/sequenced-writer.js';
import { StorageCalls } from '../../../lib/db/storage-calls.js';
import { wrap } from './support/wrapped-store.js';

let buckets = 0;
const freshStore = () => new MemoryObjectStore({ bucket: `seq-outcomes-${Date.now()}-${buckets++}` });

async function ordersOn(store: ObjectStore, schema?: Record<string, unknown>) {
  const db = new Database({ tenant: 'acme', store });
  return db.createResource({ name: 'orders', ...(schema ? { schema } : {}) });
}

const at = (seq: number) => ({ seq, tie: `m-${seq}` });
const write = (op: 'insert' | 'upsert' | 'update', seq: number, data: unknown): SequencedWrite =>
  ({ op, stamp: at(seq), data }) as SequencedWrite;
const insert = (seq: number, data: unknown) => write('insert', seq, data);
const upsert = (seq: number, data: unknown) => write('upsert', seq, data);
const update = (seq: number, data: unknown) => write('update', seq, data);

const STRICT_ORDERS = {
  type: 'object',
  properties: { a: { type: 'integer' }, b: { type: 'integer' } },
  required: ['a'],
  additionalProperties: false,
};

describe('applySequenced: writes refused before anything is read', () => {
  it('data that is not an object is rejected with ValidationError for every op but delete, and nothing is written', async () => {
    const store = freshStore();
    const orders = await ordersOn(store);
    await orders.applySequenced('o-1', [upsert(1, { a: 1 })]);
    const outcomes = await orders.applySequenced('o-1', [
      update(2, [1, 2]),
      upsert(3, 'text'),
      insert(4, null),
      update(5, { a: 5 }),
    ]);
    expect(outcomes.map((o) => o.kind)).toEqual(['rejected', 'rejected', 'rejected', 'applied']);
    for (const o of outcomes.slice(0, 3)) {
      const { error } = o as { error: ValidationError };
      expect(error).toBeInstanceOf(ValidationError);
      expect(error.issues).toEqual([{ instancePath: '', field: '', message: 'must be an object' }]);
    }
    expect(await orders.get('o-1')).toMatchObject({ a: 5, version: 2 });
    expect(Object.keys(await orders.get('o-1')).sort()).toEqual([
      'a',
      'createdAt',
      'id',
      'updatedAt',
      'version',
    ]);
  });

  it('an upsert whose data fails the schema is rejected even when newer writes make it stale', async () => {
    const orders = await ordersOn(freshStore(), STRICT_ORDERS);
    await orders.applySequenced('o-1', [upsert(5, { a: 5 })]);
    const [outcome] = await orders.applySequenced('o-1', [upsert(1, { a: 'one' })]);
    expect(outcome).toMatchObject({ kind: 'rejected', error: { name: 'ValidationError' } });
    expect((outcome as { error: unknown }).error).toBeInstanceOf(ValidationError);
  });

  it('an update is checked as the record it makes, not as a whole record: a partial patch of a valid record applies', async () => {
    const orders = await ordersOn(freshStore(), STRICT_ORDERS);
    await orders.applySequenced('o-1', [upsert(1, { a: 1 })]);
    expect(await orders.applySequenced('o-1', [update(2, { b: 2 })])).toEqual([{ kind: 'applied' }]);
    expect(await orders.get('o-1')).toMatchObject({ a: 1, b: 2 });
  });

  it('an update of a record that does not exist yet is pending, not checked against the schema until it is', async () => {
    const orders = await ordersOn(freshStore(), STRICT_ORDERS);
    expect(await orders.applySequenced('o-1', [update(2, { b: 2 })])).toEqual([{ kind: 'pending' }]);
    expect(await orders.applySequenced('o-1', [upsert(1, { a: 1 })])).toEqual([{ kind: 'applied' }]);
    expect(await orders.get('o-1')).toMatchObject({ a: 1, b: 2 });
  });

  it("the store's own fields in user data are dropped before the schema sees the record", async () => {
    const orders = await ordersOn(freshStore(), STRICT_ORDERS);
    const data = { a: 1, id: 'forged', version: 9, createdAt: 'x', updatedAt: 'y' };
    expect(await orders.applySequenced('o-1', [upsert(1, data)])).toEqual([{ kind: 'applied' }]);
    expect(await orders.applySequenced('o-1', [update(2, { b: 2, version: 1 })])).toEqual([
      { kind: 'applied' },
    ]);
    expect(await orders.get('o-1')).toMatchObject({ id: 'o-1', a: 1, b: 2, version: 2 });
  });
});

describe('applySequenced: a validator that fails for another reason than the data', () => {
  /** A Resource whose validator throws a TypeError (a bug, not a refusal) for data holding `boom`. */
  function buggy(store: ObjectStore) {
    return new Resource({
      name: 'orders',
      tenant: 'acme',
      prefix: '',
      store,
      calls: new StorageCalls(undefined),
      validate: (data) => {
        if (typeof data === 'object' && data !== null && 'boom' in data) throw new TypeError('validator bug');
      },
    });
  }

  it('fails the whole call (redelivered), never rejects the write as invalid (dead-lettered)', async () => {
    const orders = buggy(freshStore());
    await expect(orders.applySequenced('o-1', [upsert(1, { boom: 1 })])).rejects.toBeInstanceOf(TypeError);
    await orders.applySequenced('o-1', [upsert(1, { a: 1 })]);
    // The update's data is not checked alone: the bug fires on the record it makes.
    await expect(orders.applySequenced('o-1', [update(2, { boom: 1 })])).rejects.toBeInstanceOf(TypeError);
    expect(await orders.get('o-1')).toMatchObject({ a: 1, version: 1 });
  });
});

describe('applySequenced: no writes', () => {
  it('resolves no outcomes and writes nothing', async () => {
    const store = freshStore();
    const orders = await ordersOn(store);
    expect(await orders.applySequenced('o-1', [])).toEqual([]);
    expect(await store.get(orders.keyOf('o-1'))).toBeUndefined();
  });
});

describe('applySequenced: inserts', () => {
  it('an insert repeated with the same content is stale, whatever its key order and nesting; other content is RecordExistsError', async () => {
    const orders = await ordersOn(freshStore());
    const data = { a: 1, nested: { x: [1, { p: null, q: 'q' }], y: true } };
    expect(await orders.applySequenced('o-1', [insert(1, data)])).toEqual([{ kind: 'applied' }]);
    const reordered = { nested: { y: true, x: [1, { q: 'q', p: null }] }, a: 1 };
    expect(await orders.applySequenced('o-1', [insert(2, reordered)])).toEqual([{ kind: 'stale' }]);
    const others = [
      { a: 2, nested: data.nested },
      { a: 1, nested: { x: [1, { p: null, q: 'r' }], y: true } },
      { a: 1, nested: { x: { 0: 1, 1: { p: null, q: 'q' } }, y: true } },
      { a: 1, nested: { x: [1, { p: null, q: 'q' }], y: 'true' } },
      { a: 1, nested: { x: [1, { p: null, q: 'q' }], y: true, z: null } },
    ];
    for (const [i, other] of others.entries()) {
      const [outcome] = await orders.applySequenced('o-1', [insert(3 + i, other)]);
      expect(outcome).toMatchObject({ kind: 'rejected' });
      expect((outcome as { error: unknown }).error).toBeInstanceOf(RecordExistsError);
    }
    expect(await orders.get('o-1')).toMatchObject({ ...data, version: 1 });
  });

  it('array elements are compared one by one: [1, 2] is not [12]', async () => {
    const orders = await ordersOn(freshStore());
    await orders.applySequenced('o-1', [insert(1, { list: [1, 2] })]);
    const [outcome] = await orders.applySequenced('o-1', [insert(2, { list: [12] })]);
    expect(outcome).toMatchObject({ kind: 'rejected', error: { name: 'RecordExistsError' } });
    expect(await orders.applySequenced('o-1', [insert(3, { list: [1, 2] })])).toEqual([{ kind: 'stale' }]);
  });
});

describe('applySequenced: lost races and what it writes', () => {
  /** `store` whose PUTs all fail their precondition (a writer that always gets in first), counted. */
  function alwaysLosing(store: MemoryObjectStore) {
    const puts: PutObjectInput[] = [];
    const losing = wrap(store, {
      put: async (input) => {
        puts.push(input);
        throw new PreconditionFailedError(
          input.key,
          input.ifMatch === undefined ? 'if-none-match' : 'if-match',
        );
      },
    });
    return { losing, puts };
  }

  it('gives up after exactly MAX_SEQUENCED_ROUNDS PUTs with ConflictError naming the ETag it read and the 412', async () => {
    const store = freshStore();
    await (await ordersOn(store)).applySequenced('o-1', [upsert(1, { a: 1 })]);
    const { etag } = (await store.get((await ordersOn(store)).keyOf('o-1')))!;
    const { losing, puts } = alwaysLosing(store);
    const error = await (await ordersOn(losing)).applySequenced('o-1', [update(2, { a: 2 })]).catch((e) => e);
    expect(error).toBeInstanceOf(ConflictError);
    expect(error).toMatchObject({ id: 'o-1', expectedEtag: etag });
    expect(error.cause).toBeInstanceOf(PreconditionFailedError);
    expect(puts).toHaveLength(MAX_SEQUENCED_ROUNDS);
    expect(puts.every((p) => p.ifMatch === etag)).toBe(true);
  });

  it('a record that never existed gives up with an empty expected ETag', async () => {
    const { losing, puts } = alwaysLosing(freshStore());
    const error = await (await ordersOn(losing)).applySequenced('o-1', [upsert(1, { a: 1 })]).catch((e) => e);
    expect(error).toBeInstanceOf(ConflictError);
    expect(error.expectedEtag).toBe('');
    expect(puts).toHaveLength(MAX_SEQUENCED_ROUNDS);
    expect(puts.every((p) => p.ifNoneMatch === '*')).toBe(true);
  });

  it('a stored object whose sequencing field is not ours is CorruptRecordError, and nothing is written', async () => {
    const store = freshStore();
    const orders = await ordersOn(store);
    const body = JSON.stringify({ id: 'o-1', version: 1, a: 1, $seq: 'garbage' });
    await store.put({ key: orders.keyOf('o-1'), body });
    await expect(orders.applySequenced('o-1', [update(2, { a: 2 })])).rejects.toBeInstanceOf(
      CorruptRecordError,
    );
    expect((await store.get(orders.keyOf('o-1')))?.body).toBe(body);
  });

  it('the PUT carries the record version and update time as metadata, hidden states marked as such', async () => {
    const store = freshStore();
    const puts: PutObjectInput[] = [];
    const recording = wrap(store, {
      put: (input, options) => {
        puts.push(input);
        return store.put(input, options);
      },
    });
    const orders = await ordersOn(recording);
    await orders.applySequenced('o-1', [upsert(1, { a: 1 })]);
    const record = await orders.get('o-1');
    expect(puts[0]?.metadata).toEqual({ version: '1', 'updated-at': record.updatedAt });
    expect(puts[0]?.contentType).toBe('application/json');
    await orders.applySequenced('o-1', [{ op: 'delete', stamp: at(2) }]);
    expect(puts[1]?.metadata).toEqual({
      version: '2',
      'updated-at': expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      ...HIDDEN_METADATA,
    });
  });
});
