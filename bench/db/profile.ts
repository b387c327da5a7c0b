// Profiling aid for bench:db (not a benchmark): writes through the "after" path only, so that
// `node --cpu-prof --import tsx bench/db/profile.ts [writes]` shows where a write's CPU goes.
import { Database } from '../../lib/db/database.js';
import { createS3Client } from '../../lib/db/s3-client.js';
import { S3ObjectStore } from '../../lib/db/s3-object-store.js';
import { ExecutorPool } from '../../lib/pool/index.js';
import { startFakeS3 } from './fake-s3.js';

const writes = Number(process.argv[2] ?? 10_000);
const server = await startFakeS3();
const client = createS3Client({
  endpoint: server.endpoint,
  region: 'us-east-1',
  credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' },
  maxSockets: 32,
});
const pool = new ExecutorPool({ concurrency: 32, retries: 0, timeout: 10_000 });
const db = new Database({ tenant: 'bench', store: new S3ObjectStore(client, 'bench'), pool });
const orders = await db.createResource({ name: 'orders' });
const cpu = process.threadCpuUsage();
for (let done = 0; done < writes; done += 250) {
  await Promise.all(
    Array.from({ length: 250 }, (_, i) =>
      orders.upsert(`o-${done + i}`, {
        customer: `c-${i}`,
        sku: `SKU-${done + i}`,
        quantity: 1,
        status: 'pending',
      }),
    ),
  );
}
const used = process.threadCpuUsage(cpu);
process.stderr.write(`${((used.user + used.system) / writes).toFixed(1)} us/write\n`);
await db.disconnect();
pool.stop();
client.destroy();
await server.stop();
