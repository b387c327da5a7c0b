import { randomUUID } from 'node:crypto';
import { CreateBucketCommand, HeadBucketCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createS3Client,
  InvalidKeyError,
  openDatabase,
  RecordExistsError,
  RecordNotFoundError,
  type S3ObjectStore,
  ValidationError,
} from '../../../lib/db/index.js';
import { startChaosProxy } from '../../../lib/local/s3-behaviour/chaos-proxy.js';
import { TaskTimeoutError } from '../../../lib/pool/index.js';
import { localAwsEndpoints, localClientConfig } from '../../support/local-aws.js';

const bucket = `db-it-${randomUUID().slice(0, 8)}`;
let admin: S3Client;
let shared: S3Client;

function connectionString(prefix = 'it') {
  const endpoint = new URL(localAwsEndpoints().s3);
  return `http://test:test@${endpoint.host}/${bucket}/${prefix}`;
}

/** Records the headers of every PutObject the client sends. */
function recordPutHeaders(client: S3Client): Array<Record<string, string>> {
  const seen: Array<Record<string, string>> = [];
  client.middlewareStack.add(
    (next) => async (args) => {
      const request = args.request as { method?: string; headers?: Record<string, string> };
      if (request.method === 'PUT') seen.push({ ...request.headers });
      return next(args);
    },
    { step: 'finalizeRequest', name: 'recordPutHeaders' },
  );
  return seen;
}

beforeAll(async () => {
  admin = new S3Client(localClientConfig('s3'));
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  const cfg = localClientConfig('s3');
  shared = createS3Client({
    endpoint: cfg.endpoint,
    region: cfg.region,
    ...('credentials' in cfg ? { credentials: cfg.credentials } : {}),
  });
});

afterAll(() => {
  admin.destroy();
  shared.destroy();
});

describe('Database over S3 (emulator)', () => {
  it('every method round-trips through the real SDK, keys follow the layout', async () => {
    const db = openDatabase(connectionString(), { tenant: 'acme' });
    const orders = await db.createResource({ name: 'orders' });
    const record = await orders.insert({ total: 10 }, { id: 'o-1' });
    expect(await orders.get('o-1')).toEqual(record);
    const updated = await orders.update('o-1', { total: 11 });
    expect(updated).toMatchObject({ total: 11, version: 2, createdAt: record.createdAt });
    expect(await orders.get('o-1')).toEqual(updated);
    const up = await orders.upsert('o-2', { total: 20 });
    expect(await orders.get('o-2')).toEqual(up);
    await orders.delete('o-2');
    await expect(orders.get('o-2')).rejects.toBeInstanceOf(RecordNotFoundError);
    await expect(orders.delete('o-2')).resolves.toBeUndefined();
    await expect(orders.update('nope', {})).rejects.toBeInstanceOf(RecordNotFoundError);
    const raw = await admin.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'it/t=acme/' }));
    expect(raw.Contents?.map((o) => o.Key)).toEqual(['it/t=acme/r=orders/id=o-1.json']);
    expect(db.pool!.getStats()).toMatchObject({ activeCount: 0, errorCount: 0 });
    await db.disconnect();
  });

  it('list pages with a cursor absent on the last page; count and insertMany agree', async () => {
    const db = openDatabase(connectionString(), { tenant: 'pages' });
    const items = await db.createResource({ name: 'items' });
    const ids = Array.from({ length: 12 }, (_, i) => `i${String(i).padStart(2, '0')}`);
    const results = await items.insertMany(ids.map((id) => ({ id, n: Number(id.slice(1)) })));
    expect(results.every((r) => r.ok)).toBe(true);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await items.list({ limit: 5, ...(cursor ? { cursor } : {}) });
      seen.push(...page.items.map((r) => r.id));
      cursor = page.cursor;
      pages += 1;
    } while (cursor !== undefined);
    expect(pages).toBe(3);
    expect(seen).toEqual(ids);
    expect(await items.count()).toBe(12);
    await db.disconnect();
  });

  it('conditional writes: If-None-Match on insert, If-Match on update, and the server enforces them', async () => {
    const client = createS3Client({ ...localClientConfig('s3') });
    const headers = recordPutHeaders(client);
    const db = openDatabase(connectionString(), { tenant: 'cond', client });
    const r = await db.createResource({ name: 'orders' });
    const first = await r.insert({ n: 1 }, { id: 'c1' });
    expect(headers.at(-1)?.['if-none-match']).toBe('*');
    await r.update('c1', { n: 2 });
    expect(headers.at(-1)?.['if-match']).toMatch(/^"[0-9a-f]{32}"$/);
    await r.upsert('c1', { n: 3 });
    expect(headers.at(-1)).not.toHaveProperty('if-match');
    expect(headers.at(-1)).not.toHaveProperty('if-none-match');
    // Every target enforces the conditions (the embedded S3 too): a second create of c1 is refused and the
    // record keeps its upserted content.
    await expect(r.insert({ n: 9 }, { id: 'c1' })).rejects.toBeInstanceOf(RecordExistsError);
    expect(first.id).toBe('c1');
    expect(await r.get('c1')).toMatchObject({ n: 3 });
    await db.disconnect();
    client.destroy();
  });

  it('schema errors and bad keys are refused before any request', async () => {
    const client = createS3Client({ ...localClientConfig('s3') });
    const headers = recordPutHeaders(client);
    const db = openDatabase(connectionString(), { tenant: 'acme', client });
    const r = await db.createResource({
      name: 'typed',
      schema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
    });
    await expect(r.insert({ n: 'x' } as never)).rejects.toMatchObject({
      name: 'ValidationError',
      field: 'n',
    });
    await expect(r.insert({} as never)).rejects.toBeInstanceOf(ValidationError);
    await expect(r.insert({ n: 1 }, { id: '../t=evil/x' })).rejects.toBeInstanceOf(InvalidKeyError);
    await expect(r.get('%2e%2e')).rejects.toBeInstanceOf(InvalidKeyError);
    expect(headers).toHaveLength(0);
    expect(db.pool!.getStats().processedCount).toBe(0);
    await db.disconnect();
    client.destroy();
  });

  it('tenants sharing a bucket and an injected client see only their own prefix; disconnect leaves the client open', async () => {
    const acme = openDatabase(connectionString('iso'), { tenant: 'acme', client: shared });
    const evil = openDatabase(connectionString('iso'), { tenant: 'evil', client: shared });
    expect((acme.store as S3ObjectStore).client).toBe(shared);
    const mine = await acme.createResource({ name: 'orders' });
    const theirs = await evil.createResource({ name: 'orders' });
    await mine.insert({ a: 1 }, { id: 'x' });
    await theirs.insert({ secret: 1 }, { id: 'y' });
    expect((await mine.list()).items.map((r) => r.id)).toEqual(['x']);
    expect(await mine.count()).toBe(1);
    await expect(mine.get('y')).rejects.toBeInstanceOf(RecordNotFoundError);
    const raw = await admin.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: 'iso/' }));
    expect(raw.Contents?.map((o) => o.Key).sort()).toEqual([
      'iso/t=acme/r=orders/id=x.json',
      'iso/t=evil/r=orders/id=y.json',
    ]);
    await acme.disconnect();
    await evil.disconnect();
    await expect(shared.send(new HeadBucketCommand({ Bucket: bucket }))).resolves.toBeDefined();
  });

  it('a stalled request aborted by the pool timeout frees its socket and its slot', async () => {
    const proxy = await startChaosProxy({
      target: localAwsEndpoints().s3,
      model: { faults: { stallRate: 1 } },
    });
    try {
      const target = new URL(proxy.endpoint);
      const db = openDatabase(`http://test:test@${target.host}/${bucket}/stall`, {
        tenant: 'acme',
        pool: { concurrency: 1, timeout: 150, retries: 0 },
      });
      const r = await db.createResource({ name: 'orders' });
      const pool = db.pool!;
      const started = performance.now();
      const err = await r.upsert('s', { a: 1 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TaskTimeoutError);
      expect(performance.now() - started).toBeLessThan(2000);
      // The abort destroyed the socket: the proxy sees its client go away and releases the held request.
      await expect.poll(() => proxy.heldRequests(), { timeout: 2000 }).toBe(0);
      await pool.drain();
      expect(pool.getStats().activeCount).toBe(0);
      await expect(pool.enqueue(async () => 'next task ran')).resolves.toBe('next task ran');
      await db.disconnect();
    } finally {
      await proxy.stop();
    }
  });
});
