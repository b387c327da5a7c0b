// npx tsx bench/fleet/adaptive-cap-collapse.ts — the finding of docs/fleet-simulation.md ("the adaptive
// fleet cap can fall below zero"), reduced to 20 leases: concurrent holders of a fresh AdaptiveDynamoSemaphore
// each report one fast success and release together; every release applies the whole ceiling shrink computed
// from the capacity it saw at its take, so the shrinks compound. Exits 1 when a shard ends below
// MIN_CAPACITY (the prefix can then never be granted again: no holder is left to release), 0 otherwise.

import { seededRandom } from '../../lib/local/s3-behaviour/seeded-random.js';
import { AdaptiveDynamoSemaphore } from '../../lib/semaphore/adaptive-dynamo-semaphore.js';
import { MIN_CAPACITY } from '../../lib/semaphore/adaptive-limit.js';
import { DynamoModelClient, DynamoTableModel } from './dynamodb-model.js';

const random = seededRandom(17);
const table = new DynamoTableModel({ now: () => Date.now() });
const client = new DynamoModelClient(table, { random, latency: { medianMs: 1, p99Ms: 2 } });
const semaphore = () =>
  new AdaptiveDynamoSemaphore({
    client: client as never,
    tableName: 'semaphores',
    name: 'prefix:bucket/t=hot/',
    limit: 3500,
    adaptive: { ratePerSecond: 3500 },
    random,
  });
const leases = await Promise.all(Array.from({ length: 20 }, () => semaphore().acquire(1, { min: 1 })));
for (const lease of leases) lease.report?.({ succeeded: 1, throttled: 0 });
await Promise.all(leases.map((lease) => lease.release()));
let collapsed = false;
for (const item of table.itemsOf('sem#prefix:bucket/t=hot/')) {
  const capacity = Number(item.capacity?.N);
  const holders = Object.keys(item.holders?.M ?? {}).length;
  console.log(`${item.sk?.S}: capacity ${capacity}, free ${item.free?.N}, holders ${holders}`);
  if (capacity < MIN_CAPACITY) collapsed = true;
}
console.log(collapsed ? 'collapsed: a shard is below MIN_CAPACITY with no holder left' : 'ok');
process.exit(collapsed ? 1 : 0);
