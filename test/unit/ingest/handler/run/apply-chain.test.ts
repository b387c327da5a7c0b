// applyChain, one record's writes of a batch applied as one coalesced write: each write's own outcome and
// whether it was stale (the `StaleWrites` metric), the chain's priority and the deadline signal handed to
// the pool, and what a failure does to every write of the chain. Issue 14's mutation testing of
// apply-write.ts, on a real Resource over the in-memory store.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Database } from '../../../../../lib/db/database.js';
import { MemoryBucket, MemoryObjectStore } from '../../../../../lib/db/memory-object-store.js';
import { applyChain, sequencedWrite } from '../../../../../lib/ingest/handler/run/apply-write.js';
import type { IngestWrite } from '../../../../../lib/ingest/message/types.js';
import { ExecutorPool } from '../../../../../lib/pool/executor-pool.js';

const pools: ExecutorPool[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const p of pools.splice(0)) p.stop();
});

let bucket = 0;
async function orders(schema?: Record<string, unknown>) {
  const pool = new ExecutorPool({ concurrency: 4, retries: 0 });
  pools.push(pool);
  const store = new MemoryObjectStore({ bucket: new MemoryBucket(`apply-chain-${++bucket}`) });
  const db = new Database({ tenant: 'acme', store, pool });
  const resource = await db.createResource(
    schema === undefined ? { name: 'orders' } : { name: 'orders', schema },
  );
  return { resource, store };
}

let sent = 0;
function write(fields: Partial<IngestWrite> & Pick<IngestWrite, 'op'>): IngestWrite {
  sent++;
  return {
    tenant: 'acme',
    resource: 'orders',
    id: 'o-1',
    idSource: 'message',
    priority: 50,
    messageId: `m-${sent}`,
    seq: sent,
    seqSource: 'message',
    ...(fields.op === 'delete' ? {} : { data: { total: sent } }),
    ...fields,
  } as IngestWrite;
}

const open = () => new AbortController().signal;
const WRITTEN = { kind: 'written' };

describe('applyChain', () => {
  it('a new write is written and not stale; the same message again, or an older one, is stale', async () => {
    const { resource } = await orders();
    const newer = write({ op: 'upsert', seq: 20 });
    expect(await applyChain(resource, [newer], open())).toEqual([{ outcome: WRITTEN, stale: false }]);
    expect(await applyChain(resource, [newer], open())).toEqual([{ outcome: WRITTEN, stale: true }]);
    const older = write({ op: 'upsert', seq: 10 });
    expect(await applyChain(resource, [older], open())).toEqual([{ outcome: WRITTEN, stale: true }]);
  });

  it('an update of a record not created yet is kept pending: written, not stale', async () => {
    const { resource } = await orders();
    expect(await applyChain(resource, [write({ op: 'update', id: 'later' })], open())).toEqual([
      { outcome: WRITTEN, stale: false },
    ]);
  });

  it('an insert finding its own earlier delivery is stale when its id is derived, record-exists when explicit', async () => {
    const { resource } = await orders();
    const first = write({ op: 'insert', id: 'k-1', idSource: 'key', data: { total: 1 } });
    await applyChain(resource, [first], open());
    // Another message with the same derived id and other content: the id is its own record, already made.
    const derived = write({ op: 'insert', id: 'k-1', idSource: 'key', data: { total: 2 } });
    expect(await applyChain(resource, [derived], open())).toEqual([{ outcome: WRITTEN, stale: true }]);
    const explicit = write({ op: 'insert', id: 'k-1', idSource: 'message', data: { total: 3 } });
    const [refused] = await applyChain(resource, [explicit], open());
    expect(refused).toMatchObject({ outcome: { kind: 'permanent', reason: 'record-exists' }, stale: false });
  });

  it('a schema violation is permanent and not stale; the valid writes of the chain keep their outcome', async () => {
    const { resource } = await orders({ type: 'object', properties: { total: { type: 'number' } } });
    const bad = write({ op: 'upsert', data: { total: 'many' } });
    const good = write({ op: 'upsert', data: { total: 2 } });
    const [first, second] = await applyChain(resource, [bad, good], open());
    expect(first).toMatchObject({ outcome: { kind: 'permanent', reason: 'schema-violation' }, stale: false });
    expect(second).toEqual({ outcome: WRITTEN, stale: false });
  });

  it('a failed write fails every write of the chain, none stale', async () => {
    const { resource, store } = await orders();
    vi.spyOn(store, 'put').mockRejectedValue(
      Object.assign(new Error('slow down'), {
        name: 'SlowDown',
        $fault: 'server',
        $metadata: { httpStatusCode: 503 },
      }),
    );
    const chain = [write({ op: 'upsert' }), write({ op: 'upsert' })];
    const applied = await applyChain(resource, chain, open());
    expect(applied).toHaveLength(2);
    for (const a of applied)
      expect(a).toMatchObject({ outcome: { kind: 'transient', cause: 'storage' }, stale: false });
  });

  it('after the deadline nothing is written: every write is redelivered for the deadline', async () => {
    const { resource, store } = await orders();
    const put = vi.spyOn(store, 'put');
    const controller = new AbortController();
    controller.abort(new Error('cutoff'));
    const applied = await applyChain(resource, [write({ op: 'upsert' })], controller.signal);
    expect(applied).toEqual([
      { outcome: expect.objectContaining({ kind: 'transient', cause: 'deadline' }), stale: false },
    ]);
    expect(put).not.toHaveBeenCalled();
  });

  it("the chain's storage calls run at its highest priority (its write half a level up, after its read)", async () => {
    const { resource } = await orders();
    const enqueue = vi.spyOn(ExecutorPool.prototype, 'enqueue');
    await applyChain(
      resource,
      [
        write({ op: 'upsert', priority: 10 }),
        write({ op: 'upsert', priority: 90 }),
        write({ op: 'upsert', priority: 30 }),
      ],
      open(),
    );
    expect(enqueue).toHaveBeenCalled();
    // The read (when the Resource reads first) at 90, the conditional PUT at 90.5: never another level.
    for (const [, options] of enqueue.mock.calls) expect([90, 90.5]).toContain(options?.priority);
    expect(enqueue.mock.calls.at(-1)?.[1]?.priority).toBe(90.5);
  });

  it('an empty chain is no call at all', async () => {
    const { resource, store } = await orders();
    const get = vi.spyOn(store, 'get');
    expect(await applyChain(resource, [], open())).toEqual([]);
    expect(get).not.toHaveBeenCalled();
  });
});

describe('sequencedWrite', () => {
  it('stamps a write with its seq and message id; a delete carries no data', () => {
    const up = write({ op: 'upsert', seq: 7, messageId: 'm-a', data: { total: 1 } });
    expect(sequencedWrite(up)).toStrictEqual({
      op: 'upsert',
      stamp: { seq: 7, tie: 'm-a' },
      data: { total: 1 },
    });
    const del = write({ op: 'delete', seq: 8, messageId: 'm-b' });
    expect(sequencedWrite(del)).toStrictEqual({ op: 'delete', stamp: { seq: 8, tie: 'm-b' } });
  });

  it("a deferred copy's write is tied by its origin's message id (it orders as its origin did)", () => {
    const copy = write({ op: 'upsert', seq: 7, messageId: 'copy-id', originId: 'm-a', data: { total: 1 } });
    expect(sequencedWrite(copy).stamp).toStrictEqual({ seq: 7, tie: 'm-a' });
  });
});
