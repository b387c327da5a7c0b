// A record whose state applySequenced has read is written before the pool starts reading the next records:
// under a deadline, a tenant's lease then ends with records written, not with every record read and none
// written (bench:load: a lease granted with a second left wrote nothing, all 100 records handed back).
import { afterEach, describe, expect, it } from 'vitest';
import { Database } from '../../../lib/db/database.js';
import { MemoryObjectStore } from '../../../lib/db/memory-object-store.js';
import type { ObjectStore } from '../../../lib/db/object-store.js';
import { ExecutorPool } from '../../../lib/pool/executor-pool.js';

const pools: ExecutorPool[] = [];
afterEach(() => {
  for (const p of pools.splice(0)) p.stop();
});

async function loggedOrders() {
  const store = new MemoryObjectStore({ bucket: `continuation-${Date.now()}-${Math.random()}` });
  const log: string[] = [];
  const logged: ObjectStore = {
    bucket: store.bucket,
    get: (key, options) => {
      log.push(
        `GET ${key
          .split('id=')
          .at(-1)
          ?.replace(/\.json$/, '')}`,
      );
      return store.get(key, options);
    },
    put: (input, options) => {
      log.push(
        `PUT ${input.key
          .split('id=')
          .at(-1)
          ?.replace(/\.json$/, '')}`,
      );
      return store.put(input, options);
    },
    head: (key, options) => store.head(key, options),
    delete: (key, options) => store.delete(key, options),
    list: (input, options) => store.list(input, options),
  };
  const pool = new ExecutorPool({ concurrency: 1, timeout: 0 });
  pools.push(pool);
  const orders = await new Database({ tenant: 'acme', store: logged, pool }).createResource({
    name: 'orders',
  });
  const write = (i: number, priority?: number) =>
    orders.applySequenced(
      `o-${i}`,
      [{ op: 'upsert', stamp: { seq: 1, tie: `m-${i}` }, data: { n: i } }],
      priority === undefined ? {} : { priority },
    );
  return { log, write };
}

describe('applySequenced finishes a record it has read before reading the next ones', () => {
  it('one slot: at most one read ahead of the writes (before: every read first, then every write)', async () => {
    const { log, write } = await loggedOrders();
    await Promise.all([0, 1, 2, 3].map((i) => write(i)));
    // The slot a read frees starts the next queued task before the read's caller has queued its write,
    // so one more read goes first; from then on each written record frees the slot for the next.
    expect(log).toEqual([
      'GET o-0',
      'GET o-1',
      'PUT o-0',
      'PUT o-1',
      'GET o-2',
      'GET o-3',
      'PUT o-2',
      'PUT o-3',
    ]);
  });

  it("keeps the callers' priority levels: a record read at 0 is written after the reads waiting at 1", async () => {
    const { log, write } = await loggedOrders();
    await Promise.all([write(0, 0), write(1, 1), write(2, 1)]);
    expect(log).toEqual(['GET o-0', 'GET o-1', 'GET o-2', 'PUT o-1', 'PUT o-2', 'PUT o-0']);
  });
});
