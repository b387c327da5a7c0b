import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DynamoSemaphore, SemaphoreTimeoutError } from '../../../lib/semaphore/index.js';
import { semaphoreTable, storedShards, totalUsed } from './support/dynamo.js';
import type { WorkerConfig } from './support/semaphore-worker.js';
import { type HoldInterval, peakHeld } from './support/timeline.js';
import { bundleWorker, startWorker, type Worker } from './support/workers.js';

let client: DynamoDBClient;
let tableName: string;
let endpoint: string;
let bundle: string;
const started: Worker[] = [];

beforeAll(async () => {
  [{ client, tableName, endpoint }, bundle] = await Promise.all([semaphoreTable(), bundleWorker()]);
});

afterEach(async () => {
  for (const worker of started.splice(0)) {
    if (worker.process.exitCode === null && worker.process.signalCode === null)
      worker.process.kill('SIGKILL');
    await worker.exited;
  }
});

const spawnWorker = (config: WorkerConfig) => {
  const worker = startWorker(bundle, config);
  started.push(worker);
  return worker;
};

/** Starts `count` workers with one config, starts their cycles together, and collects their reports. */
async function runTogether(count: number, config: Omit<WorkerConfig, 'endpoint' | 'tableName' | 'leaseMs'>) {
  const workers = Array.from({ length: count }, () =>
    spawnWorker({ endpoint, tableName, leaseMs: 30_000, ...config }),
  );
  await Promise.all(workers.map((w) => w.next('ready')));
  for (const w of workers) w.process.send('go');
  return Promise.all(workers.map((w) => w.next('intervals')));
}

// Worker processes take seconds each to start on a loaded 2-core machine: allow more than the default 30 s.
describe('DynamoSemaphore across worker processes (dynalite)', { timeout: 60_000 }, () => {
  it('never has more than `limit` permits held at any instant while 4 processes contend', async () => {
    const name = `contend-${randomUUID().slice(0, 8)}`;
    const limit = 5;
    const reports = await runTogether(4, {
      name,
      limit,
      shards: 2,
      mode: 'contend',
      cycles: 12,
      maxK: 3,
      maxHoldMs: 8,
    });
    const intervals: HoldInterval[] = reports.flatMap((r) => r.intervals);

    expect(intervals).toHaveLength(4 * 12);
    for (const i of intervals) expect(i.permits).toBeGreaterThanOrEqual(1);
    const { peak, at } = peakHeld(intervals);
    expect(peak, `peak at ${at}`).toBeLessThanOrEqual(limit);
    // The processes really overlapped, so the bound above was exercised.
    expect(peak).toBeGreaterThan(3);
    const shards = await storedShards(client, tableName, name);
    expect(totalUsed(shards)).toBe(0);
    expect(shards.flatMap((s) => Object.keys(s.holders))).toEqual([]);
  });

  it('two processes whose ExecutorPools are sized by leases never run more than `limit` tasks combined', async () => {
    const name = `pool-${randomUUID().slice(0, 8)}`;
    const limit = 4;
    const reports = await runTogether(2, {
      name,
      limit,
      shards: 2,
      mode: 'pool',
      invocations: 6,
      want: 3,
      tasksPerInvocation: 10,
      maxHoldMs: 4,
    });
    const tasks = reports.flatMap((r) => r.intervals);
    expect(tasks).toHaveLength(2 * 6 * 10);
    // Within each process the pool never ran more tasks than its lease held.
    for (const r of reports) expect(r.poolPeakOverPermits).toBeLessThanOrEqual(0);
    const { peak } = peakHeld(tasks);
    expect(peak).toBeLessThanOrEqual(limit);
    expect(peak).toBeGreaterThan(2);
    expect(totalUsed(await storedShards(client, tableName, name))).toBe(0);
  });

  it("makes a killed worker's permits acquirable within leaseMs + 1 s", async () => {
    const name = `crash-${randomUUID().slice(0, 8)}`;
    const leaseMs = 1_500;
    const worker = spawnWorker({
      endpoint,
      tableName,
      name,
      limit: 3,
      shards: 2,
      leaseMs,
      mode: 'hold',
      k: 3,
    });
    const held = await worker.next('held');
    expect(held.permits).toBe(3);
    worker.process.kill('SIGKILL');
    await worker.exited;
    const killedAt = Date.now();

    const sem = new DynamoSemaphore({
      client,
      tableName,
      name,
      limit: 3,
      shards: 2,
      backoffBaseMs: 10,
      backoffCapMs: 100,
    });
    const lease = await sem.acquire(3, { deadline: held.expiresAt + 1_000 });
    const acquiredAt = Date.now();
    expect(lease.permits).toBe(3);
    expect(acquiredAt).toBeGreaterThanOrEqual(held.expiresAt);
    expect(acquiredAt - killedAt).toBeLessThanOrEqual(leaseMs + 1_000);
    await lease.release();
  });

  it('fences a frozen worker: after its lease is reclaimed its late release frees nothing and extend fails', async () => {
    const name = `fence-${randomUUID().slice(0, 8)}`;
    const worker = spawnWorker({
      endpoint,
      tableName,
      name,
      limit: 2,
      shards: 1,
      leaseMs: 1_000,
      mode: 'hold',
      k: 2,
    });
    const held = await worker.next('held');
    worker.process.kill('SIGSTOP'); // a frozen Lambda environment: alive, but not running

    const sem = new DynamoSemaphore({
      client,
      tableName,
      name,
      limit: 2,
      shards: 1,
      backoffBaseMs: 10,
      backoffCapMs: 100,
    });
    const lease = await sem.acquire(2, { deadline: held.expiresAt + 1_000 });
    expect(lease.fence).not.toBe(held.fence);

    worker.process.kill('SIGCONT');
    worker.process.send('extend');
    expect(await worker.next('extendFailed')).toEqual({ type: 'extendFailed', errorName: 'LeaseLostError' });
    worker.process.send('release');
    await worker.next('released');

    const shards = await storedShards(client, tableName, name);
    expect(totalUsed(shards)).toBe(2);
    expect(Object.keys(shards[0]!.holders)).toEqual([lease.fence]);
    await expect(sem.acquire(1, { deadline: Date.now() + 100 })).rejects.toBeInstanceOf(
      SemaphoreTimeoutError,
    );
    await lease.release();
  });
});
