import { parseArgs } from 'node:util';
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { type CopyLayoutResult, copyLayout } from '../db/copy-layout.js';
import { LayoutCopiedError, LayoutNotCopiedError } from '../db/errors.js';
import { isValidResource, isValidTenant, normalizePrefix, resourcePrefix } from '../db/keys.js';
import { type RemoveOldLayoutResult, removeOldLayout } from '../db/remove-old-layout.js';
import { ResourceLayout } from '../db/resource-layout.js';
import { S3ObjectStore } from '../db/s3-object-store.js';
import { isValidShardCount, MAX_SHARDS } from '../db/shard-hash.js';
import { s3ClientFromEnv } from './clients.js';
import { type CliIo, EXIT } from './io.js';

export const RESHARD_HELP = `Usage: s3-ingest reshard --bucket B --resource R --from N --to M (--tenant T ... | --all-tenants)
                        [--prefix P] [--remove-old] [--concurrency C] [--json]

Moves a resource's records from N shards to M (docs/decisions/sharded-keys.md), tenant by tenant:
  1. stop ingestion and wait one function timeout (docs/runbooks.md), then run it: each tenant's records,
     tombstones and pending partials are copied to the new layout's keys (create-only). A tenant whose copy
     completed leaves a marker and is skipped by a later run, so a run that stopped half-way is run again.
  2. declare RESOURCE_SHARDS with M for the resource, deploy, resume ingestion;
  3. run it again with --remove-old: each tenant's old keys are deleted (not those that are also its keys
     under M), only where its copy completed.

Options:
  --bucket B         the records bucket
  --prefix P         the key prefix of the connection string (s3://B/P), if any
  --resource R       the resource to move
  --from N, --to M   its shard counts before and after (1..${MAX_SHARDS}; 1: unsharded)
  --tenant T         a tenant to move (repeat for more)
  --all-tenants      every tenant with records of the resource under the prefix
  --remove-old       step 3 instead of step 1
  --concurrency C    S3 calls at once per tenant (default 16)
  --json             print one JSON object per tenant on stdout
  -h, --help         this help

Exit 0 when every tenant is done, 1 when a tenant failed or its copy did not complete: conflicts (ids whose
new key holds other content) or stale ids (records the new layout holds that the old one no longer has, left
by an earlier move: copied back they would live again); both are listed and left as they are. AWS settings
follow the SDK.`;

/** What one tenant's step did. */
type TenantOutcome =
  | {
      tenant: string;
      step: 'copy';
      copied: number;
      unchanged: number;
      conflicts: readonly string[];
      stale: readonly string[];
    }
  | { tenant: string; step: 'copy'; alreadyCopied: string }
  | { tenant: string; step: 'remove-old'; removed: number; kept: number }
  | { tenant: string; step: 'copy' | 'remove-old'; error: string };

export async function reshardCommand(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      bucket: { type: 'string' },
      prefix: { type: 'string' },
      resource: { type: 'string' },
      from: { type: 'string' },
      to: { type: 'string' },
      tenant: { type: 'string', multiple: true },
      'all-tenants': { type: 'boolean', default: false },
      'remove-old': { type: 'boolean', default: false },
      concurrency: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    io.stdout.write(`${RESHARD_HELP}\n`);
    return EXIT.ok;
  }
  const from = Number(values.from);
  const to = Number(values.to);
  const concurrency = values.concurrency === undefined ? undefined : Number(values.concurrency);
  const tenants = values.tenant ?? [];
  const problem =
    values.bucket === undefined
      ? '--bucket is required'
      : !isValidResource(values.resource)
        ? '--resource must name a resource'
        : !isValidShardCount(from) || !isValidShardCount(to)
          ? `--from and --to must be shard counts in 1..${MAX_SHARDS}`
          : from === to
            ? '--from and --to are the same shard count: nothing to move'
            : tenants.length > 0 === values['all-tenants']
              ? 'give --tenant (one or more) or --all-tenants'
              : tenants.find((t) => !isValidTenant(t)) !== undefined
                ? `--tenant ${JSON.stringify(tenants.find((t) => !isValidTenant(t)))} is no tenant name`
                : concurrency !== undefined && !(Number.isInteger(concurrency) && concurrency >= 1)
                  ? '--concurrency must be a whole number >= 1'
                  : undefined;
  if (problem !== undefined) {
    io.stderr.write(`s3-ingest reshard: ${problem}\n\n${RESHARD_HELP}\n`);
    return EXIT.usage;
  }
  const bucket = values.bucket as string;
  const resource = values.resource as string;
  const prefix = normalizePrefix(values.prefix);
  const client = await s3ClientFromEnv(io.env);
  try {
    const store = new S3ObjectStore(client, bucket);
    const names = values['all-tenants'] ? await tenantsWith(client, bucket, prefix, resource) : tenants;
    let failed = false;
    for (const tenant of names) {
      const before = new ResourceLayout(tenant, resource, prefix, from);
      const after = new ResourceLayout(tenant, resource, prefix, to);
      const outcome = await step(tenant, values['remove-old'], () =>
        values['remove-old']
          ? removeOldLayout(store, before, after, { concurrency })
          : copyLayout(store, before, after, { concurrency }),
      );
      if (
        'error' in outcome ||
        ('conflicts' in outcome && outcome.conflicts.length + outcome.stale.length > 0)
      )
        failed = true;
      io.stdout.write(`${values.json ? JSON.stringify(outcome) : describe(outcome)}\n`);
    }
    if (names.length === 0 && !values.json) io.stdout.write(`no tenant has records of ${resource}\n`);
    return failed ? EXIT.failure : EXIT.ok;
  } finally {
    client.destroy();
  }
}

async function step(
  tenant: string,
  removeOld: boolean,
  run: () => Promise<CopyLayoutResult | RemoveOldLayoutResult>,
): Promise<TenantOutcome> {
  try {
    const result = await run();
    if ('removed' in result)
      return { tenant, step: 'remove-old', removed: result.removed, kept: result.kept };
    const { copied, unchanged, conflicts, stale } = result;
    return { tenant, step: 'copy', copied, unchanged, conflicts, stale };
  } catch (error) {
    // A tenant copied by an earlier run is done, not failed: a run that stopped half-way is run again.
    if (error instanceof LayoutCopiedError)
      return { tenant, step: 'copy', alreadyCopied: error.completedAt ?? error.markerKey };
    const e = error as { name?: string; message?: string };
    const message =
      error instanceof LayoutNotCopiedError
        ? error.message
        : `${e.name ?? 'Error'}: ${e.message ?? String(error)}`;
    return { tenant, step: removeOld ? 'remove-old' : 'copy', error: message };
  }
}

function describe(outcome: TenantOutcome): string {
  if ('error' in outcome) return `${outcome.tenant}: ${outcome.step} failed: ${outcome.error}`;
  if ('alreadyCopied' in outcome) return `${outcome.tenant}: already copied (${outcome.alreadyCopied})`;
  if ('removed' in outcome)
    return `${outcome.tenant}: removed ${outcome.removed} old key(s), kept ${outcome.kept}`;
  const left = [
    ...(outcome.conflicts.length > 0
      ? [`${outcome.conflicts.length} conflict(s): ${outcome.conflicts.join(', ')}`]
      : []),
    ...(outcome.stale.length > 0 ? [`${outcome.stale.length} stale: ${outcome.stale.join(', ')}`] : []),
  ];
  const state = left.length === 0 ? 'complete' : `not complete, ${left.join('; ')}`;
  return `${outcome.tenant}: copied ${outcome.copied}, unchanged ${outcome.unchanged}, ${state}`;
}

/** The tenants under `prefix` that have any object under the resource's prefix (either layout's keys). */
async function tenantsWith(
  client: S3Client,
  bucket: string,
  prefix: string,
  resource: string,
): Promise<string[]> {
  const found: string[] = [];
  let token: string | undefined;
  do {
    const page = await client.send(
      new ListObjectsV2Command({
        Bucket: bucket,
        Prefix: `${prefix}t=`,
        Delimiter: '/',
        ContinuationToken: token,
      }),
    );
    for (const common of page.CommonPrefixes ?? []) {
      const tenant = /t=([^/]+)\/$/.exec(common.Prefix ?? '')?.[1];
      if (tenant === undefined || !isValidTenant(tenant)) continue;
      const held = await client.send(
        new ListObjectsV2Command({
          Bucket: bucket,
          Prefix: resourcePrefix(tenant, resource, prefix),
          MaxKeys: 1,
        }),
      );
      if ((held.KeyCount ?? held.Contents?.length ?? 0) > 0) found.push(tenant);
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token !== undefined);
  return found;
}
