import type { S3Client } from '@aws-sdk/client-s3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Database, RecordExistsError } from '../../lib/db/index.js';
import { backendEndpoints } from './support/backends.js';
import { type FaultProxy, type ProxiedRequest, startFaultProxy } from './support/fault-proxy.js';
import { freshTenant, rgwClient, rgwDatabase } from './support/rgw.js';

type Order = { total: number };

let proxy: FaultProxy;
let client: S3Client;
const opened: Database[] = [];

beforeAll(async () => {
  proxy = await startFaultProxy(backendEndpoints().rgw.endpoint);
  client = rgwClient({ endpoint: proxy.endpoint });
});

afterEach(async () => {
  await Promise.all(opened.splice(0).map((db) => db.disconnect()));
});

afterAll(async () => {
  client.destroy();
  await proxy.stop();
});

async function orders(label: string) {
  const db = await rgwDatabase(freshTenant(label), { client });
  opened.push(db);
  return db.createResource<Order>({ name: 'orders' });
}

/** The conditional PUT of record `id` (insert: If-None-Match, update: If-Match). */
const conditionalPutOf =
  (id: string, header: 'if-none-match' | 'if-match') =>
  (req: ProxiedRequest): boolean =>
    req.method === 'PUT' && req.key.endsWith(`/id=${id}.json`) && req.headers[header] !== undefined;

describe('Database on Ceph RGW behind a fault proxy: 409 and lost responses', () => {
  // S3 answers 409 ConditionalRequestConflict to a conditional write that raced another; AWS says retry it.
  // The store leaves it as the SDK's error (not PreconditionFailedError) and the pool retries it as transient.
  it('an insert answered 409 ConditionalRequestConflict is retried (AWS: retry it), not reported as RecordExistsError', async () => {
    const o = await orders('conflict-insert');
    proxy.inject('conflict', conditionalPutOf('c-1', 'if-none-match'));
    const created = await o.insert({ total: 1 }, { id: 'c-1' });
    expect(proxy.applied).toContainEqual(expect.objectContaining({ fault: 'conflict', method: 'PUT' }));
    expect(await o.get('c-1')).toEqual(created);
  });

  it('an update answered 409 ConditionalRequestConflict is retried and applied once', async () => {
    const o = await orders('conflict-update');
    await o.insert({ total: 1 }, { id: 'c-2' });
    proxy.inject('conflict', conditionalPutOf('c-2', 'if-match'));
    const updated = await o.update('c-2', { total: 2 });
    expect(updated).toMatchObject({ total: 2, version: 2 });
    expect(await o.get('c-2')).toEqual(updated);
  });

  it('an insert whose write landed but whose response was lost succeeds on retry (its own body is found), once', async () => {
    const o = await orders('lost-insert');
    proxy.inject('lose-response', conditionalPutOf('l-1', 'if-none-match'));
    const created = await o.insert({ total: 1 }, { id: 'l-1' });
    expect(proxy.applied).toContainEqual(expect.objectContaining({ fault: 'lose-response', method: 'PUT' }));
    expect(await o.get('l-1')).toEqual(created);
    // A different writer of the same id is still refused: the retry rule only forgives our own body.
    await expect(o.insert({ total: 2 }, { id: 'l-1' })).rejects.toBeInstanceOf(RecordExistsError);
  });

  it('an update whose write landed but whose response was lost succeeds on retry, applied once', async () => {
    const o = await orders('lost-update');
    await o.insert({ total: 1 }, { id: 'l-2' });
    proxy.inject('lose-response', conditionalPutOf('l-2', 'if-match'));
    const updated = await o.update('l-2', { total: 2 });
    expect(updated).toMatchObject({ total: 2, version: 2 });
    expect(await o.get('l-2')).toEqual(updated);
  });
});
