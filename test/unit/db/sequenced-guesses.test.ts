// applySequenced's read-skipping guesses (lib/db/resource.ts): a Resource learns whether records it has
// not cached are usually absent, and whether its cached copies are usually current, and then writes with one
// conditional PUT instead of a GET and a PUT. A wrong guess costs one failed PUT and a re-read, never a
// write; a few wrong guesses do not stop a guess that is right nearly always, a run of them does. What is
// asserted is what S3 bills (requests per write) and what is stored, not the moving averages themselves.
import { describe, expect, it } from 'vitest';
import { Database } from '../../../lib/db/database.js';
import { MemoryObjectStore } from '../../../lib/db/memory-object-store.js';
import { type ObjectStore, PreconditionFailedError } from '../../../lib/db/object-store.js';
import type { SequencedWrite } from '../../../lib/db/sequenced-state.js';

let buckets = 0;
const freshBucket = () => `seq-guesses-${Date.now()}-${buckets++}`;

/** Requests one Resource made, by kind; `failedPuts` counts PUTs refused by their precondition (412). */
interface Requests {
  gets: number;
  puts: number;
  failedPuts: number;
}

/** A Resource on `bucket` whose store counts its requests; `putFault` makes the next PUT fail after applying. */
async function countedOrders(bucket: string) {
  const store = new MemoryObjectStore({ bucket });
  const requests: Requests = { gets: 0, puts: 0, failedPuts: 0 };
  const faults: { putAppliedThenFails?: Error } = {};
  const counted: ObjectStore = {
    bucket: store.bucket,
    get: (key, options) => {
      requests.gets++;
      return store.get(key, options);
    },
    put: async (input, options) => {
      requests.puts++;
      try {
        const out = await store.put(input, options);
        const fault = faults.putAppliedThenFails;
        faults.putAppliedThenFails = undefined;
        if (fault !== undefined) throw fault;
        return out;
      } catch (err) {
        if (err instanceof PreconditionFailedError) requests.failedPuts++;
        throw err;
      }
    },
    head: (key, options) => store.head(key, options),
    delete: (key, options) => store.delete(key, options),
    list: (input, options) => store.list(input, options),
  };
  const orders = await new Database({ tenant: 'acme', store: counted }).createResource({ name: 'orders' });
  /** The requests `write` made. */
  const cost = async (write: () => Promise<unknown>): Promise<Requests> => {
    const before = { ...requests };
    await write();
    return {
      gets: requests.gets - before.gets,
      puts: requests.puts - before.puts,
      failedPuts: requests.failedPuts - before.failedPuts,
    };
  };
  return { orders, cost, faults };
}

const at = (seq: number) => ({ seq, tie: `m-${seq}` });
const upsert = (seq: number, data: Record<string, unknown>): SequencedWrite => ({
  op: 'upsert',
  stamp: at(seq),
  data,
});
const update = (seq: number, data: Record<string, unknown>): SequencedWrite => ({
  op: 'update',
  stamp: at(seq),
  data,
});
const insert = (seq: number, data: Record<string, unknown>): SequencedWrite => ({
  op: 'insert',
  stamp: at(seq),
  data,
});

const ONE_READ_ONE_PUT: Requests = { gets: 1, puts: 1, failedPuts: 0 };
const ONE_PUT: Requests = { gets: 0, puts: 1, failedPuts: 0 };
/** A wrong guess: the PUT fails its precondition, the record is read, the PUT is made again. */
const MISSED_GUESS: Requests = { gets: 1, puts: 2, failedPuts: 1 };

describe('applySequenced guesses whether a record it has not cached exists', () => {
  it('reads first on a fresh Resource, and stops reading new records once they have nearly always been absent', async () => {
    const { orders, cost } = await countedOrders(freshBucket());
    const costs: Requests[] = [];
    for (let i = 0; i < 60; i++)
      costs.push(await cost(() => orders.applySequenced(`n-${i}`, [upsert(1, { i })])));
    expect(costs[0]).toEqual(ONE_READ_ONE_PUT);
    expect(costs.slice(0, 20)).toEqual(Array(20).fill(ONE_READ_ONE_PUT));
    expect(costs.slice(50)).toEqual(Array(10).fill(ONE_PUT));
    for (const i of [0, 30, 59]) expect(await orders.get(`n-${i}`)).toMatchObject({ i, version: 1 });
  });

  it('keeps reading records that exist: a Resource writing existing records never guesses', async () => {
    const bucket = freshBucket();
    const writer = await countedOrders(bucket);
    for (let i = 0; i < 60; i++) await writer.orders.applySequenced(`e-${i}`, [upsert(1, { i })]);
    // Another process (nothing cached) updates them all: each one is found, so it keeps reading first.
    const other = await countedOrders(bucket);
    for (let i = 0; i < 60; i++) {
      expect(
        await other.cost(() => other.orders.applySequenced(`e-${i}`, [update(2, { seen: true })])),
      ).toEqual(ONE_READ_ONE_PUT);
    }
    expect(await other.orders.get('e-59')).toMatchObject({ i: 59, seen: true, version: 2 });
  });

  it('a wrong "absent" guess costs one failed PUT and a read, never the write; one miss keeps the guess, a run of misses ends it', async () => {
    const bucket = freshBucket();
    const { orders, cost } = await countedOrders(bucket);
    const other = await countedOrders(bucket);
    for (let i = 0; i < 100; i++) await orders.applySequenced(`n-${i}`, [upsert(1, { i })]);
    expect(await cost(() => orders.applySequenced('n-new', [upsert(1, {})]))).toEqual(ONE_PUT);

    // A record another process created: the guess is wrong once, the update still lands on it.
    await other.orders.applySequenced('foreign-0', [upsert(1, { base: true })]);
    expect(await cost(() => orders.applySequenced('foreign-0', [update(2, { mine: 1 })]))).toEqual(
      MISSED_GUESS,
    );
    expect(await orders.get('foreign-0')).toMatchObject({ base: true, mine: 1, version: 2 });
    // Right 100 times, wrong once: still worth guessing.
    expect(await cost(() => orders.applySequenced('n-after-one-miss', [upsert(1, {})]))).toEqual(ONE_PUT);

    // Wrong again and again: the Resource goes back to reading first.
    const misses: Requests[] = [];
    for (let i = 1; i <= 6; i++) {
      await other.orders.applySequenced(`foreign-${i}`, [upsert(1, { base: true })]);
      misses.push(await cost(() => orders.applySequenced(`foreign-${i}`, [update(2, { mine: i })])));
    }
    expect(misses[0]).toEqual(MISSED_GUESS);
    expect(misses.at(-1)).toEqual(ONE_READ_ONE_PUT);
    expect(await orders.get('foreign-6')).toMatchObject({ base: true, mine: 6 });
  });

  it('writes that are all inserts are made create-only at once, even on a fresh Resource; mixed ones read', async () => {
    const { orders, cost } = await countedOrders(freshBucket());
    expect(await cost(() => orders.applySequenced('i-1', [insert(1, { a: 1 })]))).toEqual(ONE_PUT);
    expect(
      await cost(() => orders.applySequenced('i-2', [insert(1, { a: 1 }), insert(2, { a: 1 })])),
    ).toEqual(ONE_PUT);
    expect(
      await cost(() => orders.applySequenced('i-3', [insert(1, { a: 1 }), upsert(2, { a: 2 })])),
    ).toEqual(ONE_READ_ONE_PUT);
    expect(await orders.get('i-3')).toMatchObject({ a: 2 });
    // An insert of a record that exists with other content: the guess fails, the insert is refused.
    expect(await orders.applySequenced('i-1', [insert(5, { a: 2 })])).toEqual([
      { kind: 'rejected', error: expect.objectContaining({ name: 'RecordExistsError' }) },
    ]);
    expect(await orders.get('i-1')).toMatchObject({ a: 1 });
  });
});

describe('applySequenced guesses whether its cached copy of a record is current', () => {
  /** A Resource that rewrote one record 60 times in a row: its cached copies have always been current. */
  async function rewriting() {
    const bucket = freshBucket();
    const mine = await countedOrders(bucket);
    const other = await countedOrders(bucket);
    await mine.orders.applySequenced('r', [upsert(1, { n: 1 })]);
    const costs: Requests[] = [];
    for (let seq = 2; seq <= 60; seq++) {
      costs.push(await mine.cost(() => mine.orders.applySequenced('r', [update(seq, { n: seq })])));
    }
    return { ...mine, other, costs };
  }

  it('reads a cached record first until cached copies have nearly always been current, then writes it with one PUT', async () => {
    const { orders, costs } = await rewriting();
    expect(costs[0]).toEqual(ONE_READ_ONE_PUT);
    expect(costs.slice(0, 20)).toEqual(Array(20).fill(ONE_READ_ONE_PUT));
    expect(costs.slice(-10)).toEqual(Array(10).fill(ONE_PUT));
    expect(await orders.get('r')).toMatchObject({ n: 60 });
  });

  it('a write by another process in between costs one failed PUT and a re-read, and is kept; the guess goes on', async () => {
    const { orders, cost, other } = await rewriting();
    await other.orders.applySequenced('r', [update(61, { theirs: true })]);
    expect(await cost(() => orders.applySequenced('r', [update(62, { n: 62 })]))).toEqual(MISSED_GUESS);
    expect(await orders.get('r')).toMatchObject({ n: 62, theirs: true });
    expect(await cost(() => orders.applySequenced('r', [update(63, { n: 63 })]))).toEqual(ONE_PUT);
  });

  it('a PUT whose outcome is unknown drops the cached copy: the next write reads instead of guessing wrong', async () => {
    const { orders, cost, faults } = await rewriting();
    faults.putAppliedThenFails = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    await expect(orders.applySequenced('r', [update(61, { n: 61 })])).rejects.toMatchObject({
      code: 'ECONNRESET',
    });
    expect(await cost(() => orders.applySequenced('r', [update(62, { n: 62 })]))).toEqual(ONE_READ_ONE_PUT);
    expect(await orders.get('r')).toMatchObject({ n: 62 });
  });
});

describe('applySequenced guesses: what teaches and what ends them', () => {
  /** A Resource that created 100 new records, then rewrote record `r` 60 times: both guesses are on. */
  async function guessingBoth() {
    const bucket = freshBucket();
    const mine = await countedOrders(bucket);
    const other = await countedOrders(bucket);
    for (let i = 0; i < 100; i++) await mine.orders.applySequenced(`n-${i}`, [upsert(1, { i })]);
    await mine.orders.applySequenced('r', [upsert(1, { n: 1 })]);
    for (let seq = 2; seq <= 61; seq++) await mine.orders.applySequenced('r', [update(seq, { n: seq })]);
    expect(await mine.cost(() => mine.orders.applySequenced('r', [update(70, { n: 70 })]))).toEqual(ONE_PUT);
    expect(await mine.cost(() => mine.orders.applySequenced('n-new', [upsert(1, {})]))).toEqual(ONE_PUT);
    return { ...mine, other, seq: 70 };
  }

  it('a run of stale cached copies ends the cached guess: the Resource goes back to reading first', async () => {
    const { orders, cost, other } = await guessingBoth();
    const costs: Requests[] = [];
    for (let seq = 71; seq <= 90; seq += 2) {
      await other.orders.applySequenced('r', [update(seq, { theirs: seq })]);
      costs.push(await cost(() => orders.applySequenced('r', [update(seq + 1, { n: seq + 1 })])));
    }
    expect(costs[0]).toEqual(MISSED_GUESS);
    expect(costs.at(-1)).toEqual(ONE_READ_ONE_PUT);
    expect(await orders.get('r')).toMatchObject({ n: 90, theirs: 89 });
  });

  it('misses of one guess do not end the other: wrong "absent" guesses leave the cached guess on, and back', async () => {
    const { orders, cost, other } = await guessingBoth();
    for (const id of ['f-1', 'f-2']) {
      await other.orders.applySequenced(id, [upsert(1, { base: true })]);
      expect(await cost(() => orders.applySequenced(id, [update(2, { mine: true })]))).toEqual(MISSED_GUESS);
    }
    expect(await cost(() => orders.applySequenced('r', [update(80, { n: 80 })]))).toEqual(ONE_PUT);

    const fresh = await guessingBoth();
    for (let seq = 71; seq <= 73; seq += 2) {
      await fresh.other.orders.applySequenced('r', [update(seq, { theirs: seq })]);
      expect(await fresh.cost(() => fresh.orders.applySequenced('r', [update(seq + 1, { n: seq })]))).toEqual(
        MISSED_GUESS,
      );
    }
    expect(await fresh.cost(() => fresh.orders.applySequenced('n-later', [upsert(1, {})]))).toEqual(ONE_PUT);
  });

  it('a cached record not yet trusted is read, never guessed absent, on a Resource that guesses new records absent', async () => {
    const { orders, cost } = await countedOrders(freshBucket());
    for (let i = 0; i < 100; i++) await orders.applySequenced(`n-${i}`, [upsert(1, { i })]);
    expect(await cost(() => orders.applySequenced('n-0', [update(2, { again: true })]))).toEqual(
      ONE_READ_ONE_PUT,
    );
    expect(await orders.get('n-0')).toMatchObject({ i: 0, again: true });
  });

  it('cached copies that another process keeps changing never start the cached guess', async () => {
    const bucket = freshBucket();
    const mine = await countedOrders(bucket);
    const other = await countedOrders(bucket);
    await mine.orders.applySequenced('r', [upsert(1, {})]);
    const costs: Requests[] = [];
    for (let seq = 2; seq < 100; seq += 2) {
      await other.orders.applySequenced('r', [update(seq, { theirs: seq })]);
      costs.push(await mine.cost(() => mine.orders.applySequenced('r', [update(seq + 1, { n: seq })])));
    }
    expect(costs).toEqual(Array(costs.length).fill(ONE_READ_ONE_PUT));
  });

  it('a cached record another process deleted is read, found absent and written again', async () => {
    const bucket = freshBucket();
    const mine = await countedOrders(bucket);
    const other = await countedOrders(bucket);
    await mine.orders.applySequenced('r', [upsert(1, { a: 1 })]);
    await other.orders.delete('r');
    expect(await mine.orders.applySequenced('r', [upsert(2, { a: 2 })])).toEqual([{ kind: 'applied' }]);
    expect(await mine.orders.get('r')).toMatchObject({ a: 2 });
  });

  it("the plain API's writes drop the cached copy: the next sequenced write reads instead of guessing wrong", async () => {
    // Only the cached guess is on (one record, rewritten): an uncached record is read first.
    const { orders, cost } = await countedOrders(freshBucket());
    await orders.applySequenced('r', [upsert(1, { n: 1 })]);
    for (let seq = 2; seq <= 61; seq++) await orders.applySequenced('r', [update(seq, { n: seq })]);
    expect(await cost(() => orders.applySequenced('r', [update(80, { n: 80 })]))).toEqual(ONE_PUT);
    await orders.update('r', { plain: 'update' });
    expect(await cost(() => orders.applySequenced('r', [update(81, { n: 81 })]))).toEqual(ONE_READ_ONE_PUT);
    expect(await cost(() => orders.applySequenced('r', [update(82, { n: 82 })]))).toEqual(ONE_PUT);
    await orders.upsert('r', { plain: 'upsert' });
    expect(await cost(() => orders.applySequenced('r', [update(83, { n: 83 })]))).toEqual(ONE_READ_ONE_PUT);
    await orders.delete('r');
    expect(await cost(() => orders.applySequenced('r', [update(84, { n: 84 })]))).toEqual(ONE_READ_ONE_PUT);
    // `r` is now a pending partial (hidden): a plain insert takes its key over.
    await orders.insert({ plain: 'insert' }, { id: 'r' });
    expect(await cost(() => orders.applySequenced('r', [update(85, { n: 85 })]))).toEqual(ONE_READ_ONE_PUT);
    expect(await orders.get('r')).toMatchObject({ plain: 'insert', n: 85 });
  });
});
