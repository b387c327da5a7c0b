// A separate OS process that uses one DynamoSemaphore, driven by the tests through fork() IPC.
//   contend: report 'ready', wait for 'go', run `cycles` acquire/hold/release cycles and send back every hold interval.
//   hold:    acquire `k` permits, report the lease, then wait for 'release' / 'extend' commands.
import { ExecutorPool } from '../../../../lib/pool/index.js';
import { DynamoSemaphore, withPermits } from '../../../../lib/semaphore/index.js';
import type { HoldInterval } from './timeline.js';
import { sendToTest, workerClient, workerConfig } from './worker-process.js';

export interface WorkerConfig {
  endpoint: string;
  tableName: string;
  name: string;
  limit: number;
  shards: number;
  leaseMs: number;
  mode: 'contend' | 'hold' | 'pool';
  cycles?: number;
  maxK?: number;
  maxHoldMs?: number;
  k?: number;
  /** pool mode: invocations to run, permits each wants, tasks each enqueues. */
  invocations?: number;
  want?: number;
  tasksPerInvocation?: number;
}

export type WorkerMessage =
  | { type: 'ready' }
  | { type: 'intervals'; intervals: HoldInterval[]; poolPeakOverPermits?: number }
  | { type: 'held'; fence: string; permits: number; expiresAt: number }
  | { type: 'released' }
  | { type: 'extendFailed'; errorName: string }
  | { type: 'extended' };

const config = workerConfig<WorkerConfig>();
const send = (message: WorkerMessage) => sendToTest(message);
const client = workerClient(config.endpoint);
const semaphore = new DynamoSemaphore({
  client,
  tableName: config.tableName,
  name: config.name,
  limit: config.limit,
  shards: config.shards,
  leaseMs: config.leaseMs,
  backoffBaseMs: 5,
  backoffCapMs: 50,
});
const randomInt = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo + 1));

if (config.mode !== 'hold') {
  // Start all workers' cycles together (process start-up times differ by seconds on a loaded machine).
  const go = new Promise((resolve) => process.once('message', resolve));
  await send({ type: 'ready' });
  await go;
}

if (config.mode === 'pool') {
  // Each "invocation" sizes one ExecutorPool by a lease (withPermits) and runs its S3-like tasks through it;
  // every task logs the interval it was in flight.
  const intervals: HoldInterval[] = [];
  const pool = new ExecutorPool({ concurrency: 1, retries: 0 });
  let peakOverPermits = Number.NEGATIVE_INFINITY;
  let permits = 0;
  pool.on('pool:taskStarted', ({ activeCount }) => {
    peakOverPermits = Math.max(peakOverPermits, activeCount - permits);
  });
  for (let i = 0; i < (config.invocations ?? 5); i++) {
    await withPermits(
      semaphore,
      pool,
      { want: config.want ?? 2, deadline: Date.now() + 20_000 },
      async (lease) => {
        permits = lease.permits;
        const tasks = Array.from({ length: config.tasksPerInvocation ?? 10 }, () =>
          pool.enqueue(async () => {
            const start = Date.now();
            await new Promise((resolve) => setTimeout(resolve, randomInt(1, config.maxHoldMs ?? 5)));
            intervals.push({ start, end: Date.now(), permits: 1 });
          }),
        );
        await Promise.all(tasks);
      },
    );
  }
  await send({ type: 'intervals', intervals, poolPeakOverPermits: peakOverPermits });
  process.exit(0);
} else if (config.mode === 'contend') {
  const intervals: HoldInterval[] = [];
  for (let i = 0; i < (config.cycles ?? 10); i++) {
    const k = randomInt(1, config.maxK ?? 1);
    const lease = await semaphore.acquire(k, { min: randomInt(1, k), deadline: Date.now() + 20_000 });
    const start = Date.now();
    await new Promise((resolve) => setTimeout(resolve, randomInt(0, config.maxHoldMs ?? 5)));
    const end = Date.now();
    if (end >= lease.expiresAt) throw new Error('held past the lease; the test would not be meaningful');
    await lease.release();
    intervals.push({ start, end, permits: lease.permits });
  }
  await send({ type: 'intervals', intervals });
  process.exit(0);
} else {
  const lease = await semaphore.acquire(config.k ?? 1);
  await send({ type: 'held', fence: lease.fence, permits: lease.permits, expiresAt: lease.expiresAt });
  process.on('message', async (command: 'release' | 'extend') => {
    if (command === 'release') {
      await lease.release();
      await send({ type: 'released' });
      process.exit(0);
    }
    try {
      await lease.extend(config.leaseMs);
      await send({ type: 'extended' });
    } catch (err) {
      await send({ type: 'extendFailed', errorName: (err as Error).name });
    }
  });
}
