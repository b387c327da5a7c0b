// Profiling aid for bench:db (not a benchmark): writes through the "after" path only (createS3Client), warms
// up, then records a CPU profile of the steady state alone (no module loading, no JIT warm-up):
// `npx tsx bench/db/profile.ts [writes] [out.cpuprofile]` (open the file in Chrome DevTools or VS Code).
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { Database } from '../../lib/db/database.js';
import { createS3Client } from '../../lib/db/s3-client.js';
import { S3ObjectStore } from '../../lib/db/s3-object-store.js';
import { ExecutorPool } from '../../lib/pool/index.js';
import { startFakeS3 } from './fake-s3.js';

const writes = Number(process.argv[2] ?? 10_000);
const out = process.argv[3] ?? 'bench-db.cpuprofile';
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

async function write(from: number, n: number): Promise<void> {
  for (let done = 0; done < n; done += 250) {
    await Promise.all(
      Array.from({ length: 250 }, (_, i) =>
        orders.upsert(`o-${from + done + i}`, {
          customer: `c-${i}`,
          sku: `SKU-${from + done + i}`,
          quantity: 1,
          status: 'pending',
        }),
      ),
    );
  }
}

await write(0, 2_000); // warm up: JIT, sockets, credentials
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.start');
const cpu = process.threadCpuUsage();
await write(2_000, writes);
const used = process.threadCpuUsage(cpu);
const { profile } = await session.post('Profiler.stop');
session.disconnect();
writeFileSync(out, JSON.stringify(profile));
process.stderr.write(`${((used.user + used.system) / writes).toFixed(1)} us/write (profiled), ${out}\n`);
await db.disconnect();
pool.stop();
client.destroy();
await server.stop();
