import { randomUUID } from 'node:crypto';
import { CreateBucketCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../../lib/cli/main.js';
import { type Database, openDatabase, RecordNotFoundError } from '../../../lib/db/index.js';
import { localAwsEndpoints, localClientConfig } from '../../support/local-aws.js';
import { captureIo } from './capture-io.js';

// `s3-ingest reshard` over the embedded S3, as an operator runs it: copy every tenant's records to the new
// shard count, run again after a stop half-way, then remove the old keys once the new count is declared.

const bucket = `cli-reshard-${randomUUID().slice(0, 8)}`;
let admin: S3Client;
const opened: Database[] = [];

function connect(tenant: string): Database {
  const endpoint = new URL(localAwsEndpoints().s3);
  const db = openDatabase(`http://test:test@${endpoint.host}/${bucket}/app`, { tenant });
  opened.push(db);
  return db;
}

const io = () => captureIo({ AWS_ENDPOINT_URL_S3: localAwsEndpoints().s3 });

/** `s3-ingest reshard` of `resource` in this bucket, under the key prefix `app`, from `from` to `to` shards. */
const reshardOf = (resource: string, from: number, to: number, ...args: string[]) => [
  'reshard',
  '--bucket',
  bucket,
  '--prefix',
  'app',
  '--resource',
  resource,
  '--from',
  String(from),
  '--to',
  String(to),
  ...args,
];
const reshard = (...args: string[]) => reshardOf('orders', 1, 4, ...args);

/** Every key under a tenant's resource. */
async function keysOf(tenant: string): Promise<string[]> {
  const page = await admin.send(
    new ListObjectsV2Command({ Bucket: bucket, Prefix: `app/t=${tenant}/r=orders/` }),
  );
  return (page.Contents ?? []).map((o) => o.Key ?? '');
}

beforeAll(async () => {
  admin = new S3Client(localClientConfig('s3'));
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  for (const [tenant, n] of [
    ['acme', 12],
    ['globex', 5],
  ] as const) {
    const orders = await connect(tenant).createResource({ name: 'orders' });
    await orders.insertMany(Array.from({ length: n }, (_, i) => ({ id: `o-${i}`, n: i })));
  }
  // A tenant without the resource: --all-tenants leaves it alone.
  await (await connect('initech').createResource({ name: 'users' })).insert({ n: 1 }, { id: 'u-1' });
});

afterAll(async () => {
  await Promise.all(opened.map((db) => db.disconnect()));
  admin.destroy();
});

describe('s3-ingest reshard', () => {
  it('copies one tenant, then every tenant (the one done before is skipped), then removes the old keys', async () => {
    const first = io();
    expect(await main(reshard('--tenant', 'acme'), first.value)).toBe(0);
    expect(first.stdout()).toBe('acme: copied 12, unchanged 0, complete\n');

    // The run stopped after acme; run again for every tenant: acme's completed copy is not made again.
    const all = io();
    expect(await main(reshard('--all-tenants', '--json'), all.value)).toBe(0);
    const outcomes = all
      .stdout()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(outcomes).toEqual([
      { tenant: 'acme', step: 'copy', alreadyCopied: expect.any(String) },
      { tenant: 'globex', step: 'copy', copied: 5, unchanged: 0, conflicts: [], stale: [] },
    ]);

    // The resource declared with 4 shards reads every record; the old keys are still there.
    const acme = await connect('acme').createResource({ name: 'orders', shards: 4 });
    expect(await acme.count()).toBe(12);
    // inspect counts each record once; the old layout's keys apart, until they are removed.
    const inspected = io();
    expect(await main(['inspect', '--bucket', bucket, '--json'], inspected.value)).toBe(0);
    const counts = JSON.parse(inspected.stdout()).bucket;
    expect(counts.byTenant).toEqual({ acme: { orders: 12 }, globex: { orders: 5 }, initech: { users: 1 } });
    expect(counts.oldLayoutKeys).toEqual({
      acme: { orders: { fromShards: 1, toShards: 4, keys: 12 } },
      globex: { orders: { fromShards: 1, toShards: 4, keys: 5 } },
    });
    await acme.delete('o-3');
    expect((await keysOf('acme')).filter((k) => k.includes('/s=')).length).toBe(11);

    const removal = io();
    expect(await main(reshard('--all-tenants', '--remove-old'), removal.value)).toBe(0);
    expect(removal.stdout()).toBe(
      'acme: removed 12 old key(s), kept 0\nglobex: removed 5 old key(s), kept 0\n',
    );
    expect((await keysOf('acme')).every((k) => k.includes('/s='))).toBe(true);
    expect(await acme.count()).toBe(11);
    await expect(acme.get('o-3')).rejects.toBeInstanceOf(RecordNotFoundError);
    const after = io();
    expect(await main(['inspect', '--bucket', bucket], after.value)).toBe(0);
    expect(after.stdout()).toContain('  acme/orders: 11\n');
    expect(await (await connect('globex').createResource({ name: 'orders', shards: 4 })).count()).toBe(5);
  });

  it('refuses to remove old keys where no copy completed, and names the tenant: exit 1, nothing removed', async () => {
    const run = io();
    expect(await main(reshardOf('users', 1, 2, '--tenant', 'initech', '--remove-old'), run.value)).toBe(1);
    expect(run.stdout()).toMatch(/^initech: remove-old failed: no completed copy/);
    expect(await (await connect('initech').createResource({ name: 'users' })).count()).toBe(1);
  });

  it('bad options are a usage error naming the option, before any request', async () => {
    for (const [args, named] of [
      [reshard(), /--tenant \(one or more\) or --all-tenants/],
      [reshard('--tenant', 'acme', '--all-tenants'), /--tenant \(one or more\) or --all-tenants/],
      [reshardOf('orders', 4, 4, '--tenant', 'a'), /same shard count/],
      [reshardOf('orders', 0, 4, '--tenant', 'a'), /--from and --to/],
      [reshard('--tenant', 'Not A Tenant'), /is no tenant name/],
      [reshard('--tenant', 'acme', '--concurrency', 'lots'), /--concurrency/],
    ] as const) {
      const run = io();
      expect(await main([...args], run.value)).toBe(64);
      expect(run.stderr()).toMatch(named);
    }
  });
});
