// The plain Resource API at the edges of its storage requests: an insert taking over a hidden object
// (tombstone, pending partial) when someone races it or its response is lost, the caller's signal on every
// request, and count() when the store reports no sizes or objects change between the listing and the HEAD.
import { S3ServiceException } from '@aws-sdk/client-s3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Database } from '../../../lib/db/database.js';
import { RecordExistsError } from '../../../lib/db/errors.js';
import { MemoryObjectStore } from '../../../lib/db/memory-object-store.js';
import {
  type ObjectStore,
  PreconditionFailedError,
  type PutObjectInput,
  type StoreCallOptions,
} from '../../../lib/db/object-store.js';
import type { SequencedWrite } from '../../../lib/db/sequenced-state.js';
import { ExecutorPool } from '../../../lib/pool/index.js';
import { wrap } from './support/wrapped-store.js';

let buckets = 0;
const freshStore = () => new MemoryObjectStore({ bucket: `resource-requests-${Date.now()}-${buckets++}` });

const open: Database[] = [];
afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(open.splice(0).map((db) => db.disconnect()));
});

async function ordersOn(store: ObjectStore, pool?: ExecutorPool) {
  const db = new Database({ tenant: 'acme', store, ...(pool ? { pool } : {}) });
  open.push(db);
  return db.createResource({ name: 'orders' });
}

const del = (seq: number): SequencedWrite => ({ op: 'delete', stamp: { seq, tie: `m-${seq}` } });
const isTakeOver = (input: PutObjectInput) => input.ifMatch !== undefined;
const denied = () =>
  new S3ServiceException({
    name: 'AccessDenied',
    $fault: 'client',
    $metadata: { httpStatusCode: 403 },
    message: 'Access Denied',
  });

describe('insert over a hidden object (tombstone)', () => {
  /** A store holding a tombstone at `o-1`, and a Resource on it whose store is `overrides` of it. */
  async function tombstoned(
    overrides: (store: MemoryObjectStore) => Partial<ObjectStore>,
    pool?: ExecutorPool,
  ) {
    const store = freshStore();
    await (await ordersOn(store)).applySequenced('o-1', [del(1)]);
    return { store, orders: await ordersOn(wrap(store, overrides(store)), pool) };
  }

  it('a record created by someone else between the read of the tombstone and the take-over is RecordExistsError, and kept', async () => {
    const { orders } = await tombstoned((store) => ({
      put: async (input, options) => {
        if (isTakeOver(input)) {
          const theirs = JSON.stringify({
            id: 'o-1',
            createdAt: 'c',
            updatedAt: 'u',
            version: 1,
            theirs: true,
          });
          await store.put({ key: input.key, body: theirs });
        }
        return store.put(input, options);
      },
    }));
    const error = await orders.insert({ mine: true }, { id: 'o-1' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RecordExistsError);
    expect((error as Error).cause).toBeInstanceOf(PreconditionFailedError);
    expect(await orders.get('o-1')).toMatchObject({ theirs: true });
  });

  it('a take-over refused for another reason is that error, not RecordExistsError', async () => {
    const { orders } = await tombstoned((store) => ({
      put: (input, options) => (isTakeOver(input) ? Promise.reject(denied()) : store.put(input, options)),
    }));
    await expect(orders.insert({ a: 1 }, { id: 'o-1' })).rejects.toMatchObject({ name: 'AccessDenied' });
  });

  it('a take-over whose response was lost is retried, finds its own write and succeeds', async () => {
    let lost = false;
    const pool = new ExecutorPool({ concurrency: 2, retries: 2, retryDelay: 0 });
    const { orders } = await tombstoned(
      (store) => ({
        put: async (input, options) => {
          const out = await store.put(input, options);
          if (isTakeOver(input) && !lost) {
            lost = true;
            throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
          }
          return out;
        },
      }),
      pool,
    );
    await expect(orders.insert({ a: 1 }, { id: 'o-1' })).resolves.toMatchObject({ id: 'o-1', a: 1 });
    expect(lost).toBe(true);
    expect(await orders.get('o-1')).toMatchObject({ a: 1, version: 1 });
  });

  it('two inserts of byte-identical records racing for one tombstone: one wins, the other is RecordExistsError', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2026-11-30T12:00:00Z'));
    // Both take-overs are held until both were sent, so both read the same tombstone first.
    let arrived = 0;
    let release: () => void = () => undefined;
    const bothSent = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { orders } = await tombstoned((store) => ({
      put: async (input, options) => {
        if (isTakeOver(input)) {
          if (++arrived === 2) release();
          await bothSent;
        }
        return store.put(input, options);
      },
    }));
    const results = await Promise.allSettled([
      orders.insert({ a: 1 }, { id: 'o-1' }),
      orders.insert({ a: 1 }, { id: 'o-1' }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    const loser = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(loser.reason).toBeInstanceOf(RecordExistsError);
  });

  it('a key that is gone again when the 412 is looked at is RecordExistsError, not a TypeError', async () => {
    const store = freshStore();
    const orders = await ordersOn(
      wrap(store, {
        put: async (input) => {
          throw new PreconditionFailedError(input.key, 'if-none-match');
        },
      }),
    );
    await expect(orders.insert({ a: 1 }, { id: 'o-1' })).rejects.toBeInstanceOf(RecordExistsError);
  });
});

describe("the caller's signal reaches every request", () => {
  it('insert over a tombstone, update, upsert, delete, applySequenced, list and count', async () => {
    const store = freshStore();
    const seen: [string, AbortSignal | undefined][] = [];
    /** Records the signal `options` carries, then hands back `answer`. */
    const probe = <T>(op: string, options: StoreCallOptions | undefined, answer: T): T => {
      seen.push([op, options?.signal]);
      return answer;
    };
    const orders = await ordersOn(
      wrap(store, {
        put: (input, options) => probe('put', options, store.put(input, options)),
        get: (key, options) => probe('get', options, store.get(key, options)),
        head: (key, options) => probe('head', options, store.head(key, options)),
        delete: (key, options) => probe('delete', options, store.delete(key, options)),
        list: (input, options) => probe('list', options, store.list(input, options)),
      }),
    );
    const signal = new AbortController().signal;
    const options = { signal };
    await orders.applySequenced('gone', [del(1)], options);
    await orders.applySequenced(
      'o-1',
      [{ op: 'update', stamp: { seq: 2, tie: 'b' }, data: { b: 1 } }],
      options,
    );
    await orders.insert({ a: 1 }, { ...options, id: 'gone' });
    await orders.update('gone', { a: 2 }, options);
    await orders.upsert('o-2', { a: 1 }, options);
    await orders.list(options);
    expect(await orders.count(options)).toBe(2);
    await orders.delete('o-2', options);
    expect(new Set(seen.map(([op]) => op))).toEqual(new Set(['put', 'get', 'head', 'delete', 'list']));
    expect(seen.filter(([, s]) => s !== signal)).toEqual([]);
  });
});

describe('count', () => {
  it('a store that reports no sizes: every object is told apart with a HEAD', async () => {
    const store = freshStore();
    const writer = await ordersOn(store);
    await writer.upsert('a', { n: 1 });
    await writer.upsert('b', { n: 2 });
    await writer.applySequenced('gone', [del(1)]);
    let heads = 0;
    const sizeless = await ordersOn(
      wrap(store, {
        list: async (input, options) => {
          const { sizes: _, ...page } = await store.list(input, options);
          return page;
        },
        head: (key, options) => {
          heads++;
          return store.head(key, options);
        },
      }),
    );
    expect(await sizeless.count()).toBe(2);
    expect(heads).toBe(3);
  });

  it('an empty object at a record key is not a record (no HEAD); one deleted before its HEAD is not counted', async () => {
    const store = freshStore();
    const writer = await ordersOn(store);
    await writer.upsert('a', { n: 1 });
    await store.put({ key: writer.keyOf('empty'), body: '' });
    // An odd-sized object that is deleted between the listing and its HEAD.
    const legacy = JSON.stringify({ id: 'legacy', createdAt: 'x', updatedAt: 'x', version: 1 });
    await store.put({
      key: writer.keyOf('legacy'),
      body: Buffer.byteLength(legacy) % 2 ? legacy : `${legacy} `,
    });
    const headed: string[] = [];
    const racing = await ordersOn(
      wrap(store, {
        head: async (key, options) => {
          headed.push(key);
          await store.delete(key, options);
          return store.head(key, options);
        },
      }),
    );
    expect(await racing.count()).toBe(1);
    expect(headed).toEqual([writer.keyOf('legacy')]);
  });
});
