// One round of bench:db (spawned by bench/db.ts): every S3 client setup writes through its own Database +
// ExecutorPool + S3ObjectStore against one in-process fake S3, in alternating chunks, so whatever else
// the machine is doing weighs on every setup alike. Measures the main thread's CPU per write.
import { S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { Database } from '../../lib/db/database.js';
import { createS3Client } from '../../lib/db/s3-client.js';
import { dropUnusedPerCallMiddlewares, reuseRequestSigner } from '../../lib/db/s3-client-trims.js';
import { S3ObjectStore } from '../../lib/db/s3-object-store.js';
import { KeyCachingSha256 } from '../../lib/db/sha256-key-cache.js';
import { ExecutorPool } from '../../lib/pool/index.js';
import { reportToParent } from '../support/child.js';
import { startFakeS3 } from './fake-s3.js';
import { CLIENT_SETUPS, type ClientSetup, type DbSetupResult } from './setups.js';
import { SignalScopedHttpHandler } from './signal-scoped-http-handler.js';

const writes = Number(process.argv[2] ?? 10_000);
const CHUNK = 250;
const CONCURRENCY = 32;
const server = await startFakeS3();
const credentials = { accessKeyId: 'bench', secretAccessKey: 'bench' };
const httpAgent = { keepAlive: true, maxSockets: CONCURRENCY };

function clientFor(setup: ClientSetup): S3Client {
  const common = {
    maxAttempts: 1,
    region: 'us-east-1',
    endpoint: server.endpoint,
    credentials,
    forcePathStyle: true,
  };
  switch (setup) {
    case 'per-call-signal':
      // Before: what createS3Client built until now (no middleware cache). S3ObjectStore passes the pool's
      // signal per call as `{ abortSignal }` to such a client, and the SDK resolves the stack per call.
      return new S3Client({
        ...common,
        requestHandler: new NodeHttpHandler({ httpAgent, connectionTimeout: 3000, requestTimeout: 0 }),
      });
    case 'scoped-signal':
    case 'checksums-when-required':
    case 'unused-middlewares-dropped':
    case 'signer-reused':
    case 'sha256-key-cache':
    case 'signing-key-reused': {
      // The steps from createS3Client as of 6f08387 to now, each adding one change to the one before.
      const step = CLIENT_SETUPS.indexOf(setup);
      const client = new S3Client({
        ...common,
        // Step 1: cached middleware stack, the signal via the async context (createS3Client as of 6f08387).
        cacheMiddleware: true,
        // Step 2: checksums only where S3 requires them.
        ...(step >= 2
          ? { requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' }
          : {}),
        // Step 5: HMAC keys kept as key objects.
        ...(step >= 5 ? { sha256: KeyCachingSha256 } : {}),
        requestHandler: new SignalScopedHttpHandler({
          httpAgent,
          connectionTimeout: 3000,
          requestTimeout: 0,
        }),
      });
      // Step 3: per-call middlewares S3ObjectStore does not use dropped. Step 4: one SigV4 signer reused.
      if (step >= 3) dropUnusedPerCallMiddlewares(client);
      // Step 6: the signer keeps its last signing key (createS3Client on Node's http client).
      if (step >= 4) reuseRequestSigner(client, { reuseKey: step >= 6 });
      return client;
    }
    case 'create-s3-client':
      // After: what createS3Client builds now (step 6 with undici's HTTP client).
      return createS3Client({
        endpoint: server.endpoint,
        region: 'us-east-1',
        credentials,
        maxSockets: CONCURRENCY,
      });
  }
}

const data = (i: number) => ({
  customer: `c-${i % 997}`,
  sku: `SKU-${i}`,
  quantity: 1 + (i % 9),
  status: 'pending',
});
const setups = await Promise.all(
  CLIENT_SETUPS.map(async (setup) => {
    const client = clientFor(setup);
    const pool = new ExecutorPool({ concurrency: CONCURRENCY, retries: 0, timeout: 60_000 });
    const db = new Database({ tenant: 'bench', store: new S3ObjectStore(client, 'bench'), pool });
    const orders = await db.createResource({ name: 'orders' });
    return { setup, client, pool, db, orders, cpuUs: 0, wallMs: 0, written: 0 };
  }),
);

async function chunk(s: (typeof setups)[number], n: number, measure: boolean): Promise<void> {
  const offset = s.written;
  const cpu = process.threadCpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: n }, (_, i) => s.orders.upsert(`o-${offset + i}`, data(offset + i))),
  );
  if (!measure) return;
  const used = process.threadCpuUsage(cpu);
  s.cpuUs += used.user + used.system;
  s.wallMs += performance.now() - started;
  s.written += n;
}

for (const s of setups) await chunk(s, 1_000, false); // warm up: JIT, sockets, credentials
for (let done = 0; done < writes; done += CHUNK) {
  for (const s of done % (2 * CHUNK) === 0 ? setups : [...setups].reverse()) await chunk(s, CHUNK, true);
}
for (const s of setups) {
  await s.db.disconnect();
  s.pool.stop();
  s.client.destroy();
}
await server.stop();

reportToParent<DbSetupResult[]>(
  setups.map((s) => ({
    setup: s.setup,
    writes: s.written,
    cpuUsPerWrite: s.cpuUs / s.written,
    writesPerSec: s.written / (s.wallMs / 1000),
  })),
);
