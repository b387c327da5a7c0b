// `npx tsx scripts/backends/serve.ts`: starts Ceph RGW and DynamoDB Local as `npm run test:backends` does,
// prints their endpoints as JSON, and stops both (removing their directory) on Ctrl-C or SIGTERM.
// For poking at the real servers by hand; the test run starts its own.
import { startBackends } from './backends.js';

const backends = await startBackends();
process.stdout.write(`${JSON.stringify({ ...backends.endpoints, timings: backends.timings }, null, 2)}\n`);
await new Promise<void>((resolve) => {
  process.once('SIGINT', resolve);
  process.once('SIGTERM', resolve);
});
await backends.stop();
process.stdout.write('stopped\n');
