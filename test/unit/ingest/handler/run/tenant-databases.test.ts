// TenantDatabases: the container's LRU of tenant Databases. Issue 14's mutation testing found LRU-evicted
// Databases never checked for being disconnected; these tests watch the public `isConnected` / `isStopped`.
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryBucket, MemoryObjectStore } from '../../../../../lib/db/memory-object-store.js';
import {
  type TenantDatabase,
  TenantDatabases,
} from '../../../../../lib/ingest/handler/run/tenant-databases.js';
import { ConcurrencyBudget } from '../../../../../lib/pool/concurrency-budget.js';
import { testConfig } from '../support.js';

const opened: TenantDatabases[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((d) => d.close()));
});

function databases(
  env: Record<string, string> = {},
  store = new MemoryObjectStore({ bucket: new MemoryBucket('tenant-databases') }),
): TenantDatabases {
  const config = testConfig(env);
  const d = new TenantDatabases({
    config,
    store,
    budget: new ConcurrencyBudget(config.poolConcurrency),
  });
  opened.push(d);
  return d;
}

/** Resolves once `entry`'s pool has stopped (retiring runs in the background after a drain). */
async function retired(entry: TenantDatabase): Promise<void> {
  for (let i = 0; i < 100 && !entry.pool.isStopped; i++) await new Promise((r) => setImmediate(r));
}

describe('TenantDatabases', () => {
  it('opens a tenant once, with every declared resource and a pool sized by the config', async () => {
    const d = databases({ POOL_CONCURRENCY: '5', WRITE_RETRIES: '3' });
    const first = await d.get('acme');
    d.release(first);
    const again = await d.get('acme');
    d.release(again);
    expect(again).toBe(first);
    expect(d.size).toBe(1);
    expect(first.tenant).toBe('acme');
    expect(first.db.tenant).toBe('acme');
    expect(first.pool.concurrency).toBe(5);
    // Both declared resources exist; `customers` validates against its schema.
    await first.db.resource('orders').upsert('o-1', { total: 1 });
    await expect(first.db.resource('customers').upsert('c-1', { age: 3 })).rejects.toMatchObject({
      name: 'ValidationError',
    });
    await first.db.resource('customers').upsert('c-2', { name: 'Ada' });
  });

  it('creates each resource with its RESOURCE_SHARDS count: a sharded one writes under its shard prefixes', async () => {
    const store = new MemoryObjectStore({ bucket: new MemoryBucket('tenant-databases-shards') });
    const d = databases({ RESOURCE_SHARDS: '{"orders":4}' }, store);
    const acme = await d.get('acme');
    const ids = Array.from({ length: 40 }, (_, i) => `o-${i}`);
    for (const id of ids) await acme.db.resource('orders').upsert(id, { total: 1 });
    await acme.db.resource('customers').upsert('c-1', { name: 'Ada' });
    d.release(acme);
    const keys = (await store.list({ prefix: 't=acme/', maxKeys: 1000 })).keys;
    const orderShards = new Set(
      keys.filter((k) => k.startsWith('t=acme/r=orders/')).map((k) => /\/s=(\d{4})\/id=/.exec(k)?.[1]),
    );
    expect(orderShards).toEqual(new Set(['0000', '0001', '0002', '0003']));
    // The resource it does not name keeps the unsharded layout.
    expect(keys).toContain('t=acme/r=customers/id=c-1.json');
    expect(await acme.db.resource('orders').count()).toBe(40);
  });

  it('disconnects a tenant the LRU evicts when it is not in use', async () => {
    const d = databases({ TENANT_CACHE_SIZE: '1' });
    const acme = await d.get('acme');
    d.release(acme);
    const globex = await d.get('globex');
    d.release(globex);
    await retired(acme);
    expect(acme.db.isConnected).toBe(false);
    expect(acme.pool.isStopped).toBe(true);
    expect(globex.db.isConnected).toBe(true);
    expect(d.size).toBe(1);
  });

  it('keeps an evicted tenant that is in use connected until its last release', async () => {
    const d = databases({ TENANT_CACHE_SIZE: '1' });
    const acme = await d.get('acme');
    const acmeAgain = await d.get('acme');
    const globex = await d.get('globex'); // evicts acme, still in use twice
    await new Promise((r) => setImmediate(r));
    expect(acme.db.isConnected).toBe(true);
    await acme.db.resource('orders').upsert('o-1', { total: 1 });
    d.release(acme);
    await new Promise((r) => setImmediate(r));
    expect(acmeAgain.db.isConnected).toBe(true);
    d.release(acmeAgain);
    await retired(acme);
    expect(acme.db.isConnected).toBe(false);
    expect(acme.pool.isStopped).toBe(true);
    d.release(globex);
    expect(globex.db.isConnected).toBe(true);
  });

  it('close() disconnects every cached and evicted-in-use tenant', async () => {
    const d = databases({ TENANT_CACHE_SIZE: '1' });
    const acme = await d.get('acme');
    const globex = await d.get('globex'); // acme evicted while in use
    await d.close();
    for (const entry of [acme, globex]) {
      expect(entry.db.isConnected).toBe(false);
      expect(entry.pool.isStopped).toBe(true);
    }
    expect(d.size).toBe(0);
    // Releasing after close is harmless: it throws nothing, opens nothing, and does not end the use of the
    // tenant's next entry (the LRU evicting that one leaves it connected).
    expect(() => {
      d.release(acme);
      d.release(globex);
    }).not.toThrow();
    expect(d.size).toBe(0);
    const acmeNext = await d.get('acme');
    d.release(acme);
    const globexNext = await d.get('globex'); // evicts acmeNext, still in use
    await new Promise((r) => setImmediate(r));
    expect(acmeNext.db.isConnected).toBe(true);
    d.release(acmeNext);
    await retired(acmeNext);
    expect(acmeNext.db.isConnected).toBe(false);
    d.release(globexNext);
    await d.close();
  });

  it('after close() it works as new: a tenant the LRU evicts later is disconnected', async () => {
    const d = databases({ TENANT_CACHE_SIZE: '1' });
    d.release(await d.get('acme'));
    await d.close();
    const acme = await d.get('acme');
    d.release(acme);
    expect(acme.db.isConnected).toBe(true);
    d.release(await d.get('globex')); // evicts acme
    await retired(acme);
    expect(acme.db.isConnected).toBe(false);
    expect(acme.pool.isStopped).toBe(true);
  });

  it('a tenant whose Database cannot be opened rejects and leaves nothing cached', async () => {
    const d = databases({ RESOURCES: JSON.stringify({ orders: {} }) });
    // An invalid tenant name is refused by the Database.
    await expect(d.get('Not A Tenant')).rejects.toMatchObject({ name: 'InvalidKeyError' });
    expect(d.size).toBe(0);
  });
});
