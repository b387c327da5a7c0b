// The cost of sequencing (issue 15): S3 requests per write and bytes per record, sequenced writes (the
// handler's `applyChain`: one conditional PUT per record per batch, LWW state in the body) against the
// writes main applied before (`Resource` insert/upsert/update/delete one message at a time), in one run on
// the same workloads. Counts, not timings: the requests a workload costs are deterministic.
//
//   npm run bench:sequencing            (results: bench/results/sequencing.json)
import { Database } from '../lib/db/database.js';
import { RecordNotFoundError } from '../lib/db/errors.js';
import { MemoryObjectStore } from '../lib/db/memory-object-store.js';
import type {
  ListObjectsInput,
  ListObjectsPage,
  ObjectHead,
  ObjectStore,
  PutObjectInput,
  StoreCallOptions,
  StoredObject,
} from '../lib/db/object-store.js';
import type { Document, Resource } from '../lib/db/resource.js';
import { applyChain } from '../lib/ingest/handler/run/apply-write.js';
import type { IngestWrite } from '../lib/ingest/message/types.js';
import { type Row, writeResults } from './support/report.js';

/** Counts every request by kind, as S3 would bill it. */
class CountingStore implements ObjectStore {
  readonly counts = { get: 0, put: 0, delete: 0, head: 0, list: 0 };
  constructor(readonly inner: MemoryObjectStore) {}
  get bucket(): string {
    return this.inner.bucket;
  }
  put(input: PutObjectInput, options?: StoreCallOptions): Promise<{ etag: string }> {
    this.counts.put++;
    return this.inner.put(input, options);
  }
  get(key: string, options?: StoreCallOptions): Promise<StoredObject | undefined> {
    this.counts.get++;
    return this.inner.get(key, options);
  }
  head(key: string, options?: StoreCallOptions): Promise<ObjectHead | undefined> {
    this.counts.head++;
    return this.inner.head(key, options);
  }
  delete(key: string, options?: StoreCallOptions): Promise<void> {
    this.counts.delete++;
    return this.inner.delete(key, options);
  }
  list(input: ListObjectsInput, options?: StoreCallOptions): Promise<ListObjectsPage> {
    this.counts.list++;
    return this.inner.list(input, options);
  }
}

type Op = IngestWrite['op'];

interface Workload {
  readonly name: string;
  /** Writes in send order (`seq` = index); batches of 10 in that order. */
  readonly writes: readonly { readonly op: Op; readonly id: string; readonly data?: Document }[];
  /** Records written before the run (so updates have something to update). */
  readonly existing: readonly string[];
}

const MESSAGES = 2_000;
const BATCH = 10;
/** A deterministic pseudo-random sequence (mulberry32), so every run measures the same workload. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const order = (i: number) => ({
  total: i,
  status: i % 3 === 0 ? 'paid' : 'open',
  lines: [{ sku: `s-${i}`, qty: 1 }],
});

function workloads(): Workload[] {
  const rnd = random(15);
  const existing = Array.from({ length: 500 }, (_, i) => `o-${i}`);
  return [
    {
      name: 'new records (upsert each once)',
      writes: Array.from({ length: MESSAGES }, (_, i) => ({ op: 'upsert', id: `n-${i}`, data: order(i) })),
      existing: [],
    },
    {
      name: 'existing records (upsert, in order)',
      writes: Array.from({ length: MESSAGES }, (_, i) => ({
        op: 'upsert',
        id: existing[i % 500]!,
        data: order(i),
      })),
      existing,
    },
    {
      name: 'existing records (update, in order)',
      writes: Array.from({ length: MESSAGES }, (_, i) => ({
        op: 'update',
        id: existing[i % 500]!,
        data: { status: `s-${i}` },
      })),
      existing,
    },
    hot(10),
    hot(3),
  ];
  function hot(records: number): Workload {
    return {
      name: `hot records (${records} records, mixed ops)`,
      writes: Array.from({ length: MESSAGES }, (_, i) => {
        const id = `h-${Math.floor(rnd() * records)}`;
        const r = rnd();
        const op: Op = r < 0.5 ? 'update' : r < 0.95 ? 'upsert' : 'delete';
        return op === 'delete'
          ? { op, id }
          : { op, id, data: op === 'update' ? { status: `s-${i}` } : order(i) };
      }),
      existing: Array.from({ length: records }, (_, i) => `h-${i}`),
    };
  }
}

function ingestWrite(w: Workload['writes'][number], index: number): IngestWrite {
  const base = {
    tenant: 'acme',
    resource: 'orders',
    id: w.id,
    priority: 50,
    messageId: `m-${String(index).padStart(6, '0')}`,
    idSource: 'message' as const,
    seq: index + 1,
    seqSource: 'message' as const,
  };
  return w.op === 'delete'
    ? { ...base, op: 'delete' }
    : { ...base, op: w.op, data: w.data as IngestWrite extends { data: infer D } ? D : never };
}

/** main's handler: each write on its own, in message order (upsert blind, update read + conditional PUT). */
async function applyToday(orders: Resource<Document>, batch: readonly IngestWrite[]): Promise<void> {
  for (const w of batch) {
    if (w.op === 'delete') await orders.delete(w.id);
    else if (w.op === 'upsert') await orders.upsert(w.id, w.data as Document);
    else if (w.op === 'insert') await orders.insert(w.data as Document, { id: w.id });
    else
      await orders.update(w.id, w.data as Document).catch((e: unknown) => {
        if (!(e instanceof RecordNotFoundError)) throw e;
      });
  }
}

const signal = new AbortController().signal;

/** The handler's path: the batch's writes grouped per record (message order), one `applyChain` each. */
async function applySequenced(orders: Resource<Document>, batch: readonly IngestWrite[]): Promise<void> {
  const chains = new Map<string, IngestWrite[]>();
  for (const w of batch) chains.set(w.id, [...(chains.get(w.id) ?? []), w]);
  const results = await Promise.all([...chains.values()].map((chain) => applyChain(orders, chain, signal)));
  for (const { outcome } of results.flat()) {
    if (outcome.kind !== 'written') throw new Error(`a sequenced write failed: ${JSON.stringify(outcome)}`);
  }
}

/** Every record's user fields as `get` shows them: both modes must end in the same state. */
async function visibleState(store: ObjectStore, ids: Iterable<string>): Promise<string> {
  const orders = await new Database({ tenant: 'acme', store }).createResource({ name: 'orders' });
  const out: Record<string, unknown> = {};
  for (const id of [...new Set(ids)].sort()) {
    try {
      const { id: _i, createdAt: _c, updatedAt: _u, version: _v, ...fields } = await orders.get(id);
      out[id] = fields;
    } catch (err) {
      if (!(err instanceof RecordNotFoundError)) throw err;
    }
  }
  return JSON.stringify(out);
}

async function run(
  workload: Workload,
  mode: 'today' | 'sequenced',
  containers: number,
): Promise<{ row: Row; state: string }> {
  const memory = new MemoryObjectStore({ bucket: `bench-seq-${mode}-${containers}-${Math.random()}` });
  const store = new CountingStore(memory);
  // One Database per container: each has its own record cache, as Lambda containers do.
  const resources = await Promise.all(
    Array.from({ length: containers }, () =>
      new Database({ tenant: 'acme', store }).createResource({ name: 'orders' }),
    ),
  );
  const seed = resources[0]!;
  for (const [i, id] of workload.existing.entries()) {
    if (mode === 'today') await seed.upsert(id, order(-i));
    else {
      const [seeded] = await applyChain(
        seed,
        [ingestWrite({ op: 'upsert', id, data: order(-i) }, -1)],
        signal,
      );
      if (seeded?.outcome.kind !== 'written') throw new Error(`seeding ${id} failed`);
    }
  }
  // Containers start cold: what seeding cached is dropped by building fresh Databases for the run.
  const fresh = await Promise.all(
    Array.from({ length: containers }, () =>
      new Database({ tenant: 'acme', store }).createResource({ name: 'orders' }),
    ),
  );
  Object.assign(store.counts, { get: 0, put: 0, delete: 0, head: 0, list: 0 });
  const writes = workload.writes.map(ingestWrite);
  for (let b = 0; b * BATCH < writes.length; b++) {
    const batch = writes.slice(b * BATCH, (b + 1) * BATCH);
    const orders = fresh[b % containers]!;
    await (mode === 'today' ? applyToday(orders, batch) : applySequenced(orders, batch));
  }
  void resources;
  const { get, put, delete: del, head, list } = store.counts;
  const state = await visibleState(memory, [...workload.existing, ...workload.writes.map((w) => w.id)]);
  const bytes = [...memory.objects.objects.values()].map((o) => Buffer.byteLength(o.body));
  const requests = get + put + del + head + list;
  const row: Row = {
    workload: workload.name,
    containers,
    mode,
    messages: writes.length,
    'PUT+DELETE / msg': (put + del) / writes.length,
    'GET / msg': get / writes.length,
    'requests / msg': requests / writes.length,
    // S3 Standard list prices per 1,000 requests: PUT/DELETE-class $0.005 (DELETE is free), GET $0.0004.
    'cost / msg (PUT = 1)': (put + get * (0.0004 / 0.005)) / writes.length,
    objects: bytes.length,
    'bytes / object': bytes.length === 0 ? 0 : bytes.reduce((a, c) => a + c, 0) / bytes.length,
  };
  return { row, state };
}

const rows: Row[] = [];
for (const workload of workloads()) {
  for (const containers of [1, 4]) {
    const { row: today, state: expected } = await run(workload, 'today', containers);
    const { row: sequenced, state } = await run(workload, 'sequenced', containers);
    // Writes in order: sequencing must end exactly where applying them one by one does.
    if (state !== expected) throw new Error(`${workload.name}: final states differ`);
    sequenced['requests vs today'] = Number(sequenced['requests / msg']) / Number(today['requests / msg']);
    sequenced['cost vs today'] =
      Number(sequenced['cost / msg (PUT = 1)']) / Number(today['cost / msg (PUT = 1)']);
    rows.push(today, sequenced);
  }
}
writeResults('sequencing', rows, {
  note: 'Counts per message on an in-process store; batches of 10 in send order, assigned round-robin to containers.',
});
