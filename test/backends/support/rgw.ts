// The ONE place the backend suites build S3 clients, ObjectStores and Databases for Ceph RGW, so a change
// of those constructors (Database is moving to `new Database({ tenant, store, pool })`) is made here only.
import { randomUUID } from 'node:crypto';
import type { S3Client } from '@aws-sdk/client-s3';
import { createS3Client, type Database, openDatabase, S3ObjectStore } from '../../../lib/db/index.js';
import type { ExecutorPoolOptions } from '../../../lib/pool/index.js';
import { backendEndpoints } from './backends.js';

/**
 * RGW quirk, handled here and never in product code: Ceph RGW 16 compares `If-Match` literally with the
 * stored ETag, which it keeps unquoted, so the quoted ETag S3 returns (and the SDK sends back) never
 * matches. This test-only middleware strips the quotes on the way out, after serialization and before
 * signing.
 */
function sendIfMatchUnquoted(client: S3Client): S3Client {
  client.middlewareStack.add(
    (next) => async (args) => {
      const request = args.request as { headers?: Record<string, string> };
      const ifMatch = request.headers?.['if-match'];
      if (request.headers !== undefined && ifMatch !== undefined) {
        request.headers['if-match'] = ifMatch.replaceAll('"', '');
      }
      return next(args);
    },
    { step: 'build', name: 'rgwUnquotedIfMatch' },
  );
  return client;
}

/**
 * The product's pool-backed S3 client (`createS3Client`: one attempt, the pool retries) for this run's RGW,
 * or for `endpoint` (a fault proxy in front of it).
 */
export function rgwClient(options: { endpoint?: string } = {}): S3Client {
  const { rgw } = backendEndpoints();
  return sendIfMatchUnquoted(
    createS3Client({ endpoint: options.endpoint ?? rgw.endpoint, credentials: { ...rgw.credentials } }),
  );
}

/** The shared bucket every backend test writes in (each under its own prefix or tenant). */
export function rgwBucket(): string {
  return backendEndpoints().rgw.bucket;
}

/** The product's `S3ObjectStore` on this run's bucket. */
export function rgwObjectStore(client: S3Client = rgwClient()): S3ObjectStore {
  return new S3ObjectStore(client, rgwBucket());
}

/**
 * Pool settings for the suites: the defaults, but with a 20 ms retry base instead of 1 s so that retried
 * 500s and conflicts settle within a test.
 */
export const TEST_POOL: ExecutorPoolOptions = { concurrency: 32, retries: 3, retryDelay: 20 };

/** A tenant name no other test uses, so every test has its own `t=<tenant>/` prefix in the shared bucket. */
export function freshTenant(label: string): string {
  return `${label}-${randomUUID().slice(0, 8)}`;
}

/**
 * A connected product `Database` for `tenant` on this run's RGW, writing through `S3ObjectStore` over
 * `client` with its own ExecutorPool. Disconnect it at the end of the test (the client is not destroyed).
 */
export async function rgwDatabase(
  tenant: string,
  options: { client?: S3Client; executorPool?: ExecutorPoolOptions } = {},
): Promise<Database> {
  return openDatabase(`s3://${rgwBucket()}`, {
    tenant,
    client: options.client ?? rgwClient(),
    pool: options.executorPool ?? TEST_POOL,
  });
}
