// DynamoRateBudget across worker processes (the real lib code bundled with esbuild, forked as separate Node
// processes) on one dynalite: the merged timeline never holds more than the ceiling while the budget moves,
// every write keeps free = budget - held, and a killed holder's rate comes back when its lease ends.
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DynamoRateBudget } from '../../../lib/semaphore/index.js';
import { dynamoBackend } from './support/budget.js';
import type { RateWorkerConfig } from './support/rate-budget-worker.js';
import { type HoldInterval, peakHeld } from './support/timeline.js';
import { bundleWorker, startWorker, type Worker } from './support/workers.js';

const backend = dynamoBackend();
let bundle: string;
const started: Worker[] = [];

beforeAll(async () => {
  const source = fileURLToPath(new URL('./support/rate-budget-worker.ts', import.meta.url));
  [, bundle] = await Promise.all([backend.setup(), bundleWorker(source)]);
});

afterEach(async () => {
  for (const worker of started.splice(0)) {
    if (worker.process.exitCode === null && worker.process.signalCode === null)
      worker.process.kill('SIGKILL');
    await worker.exited;
  }
});

const spawn = (config: Omit<RateWorkerConfig, 'endpoint' | 'tableName'>) => {
  const worker = startWorker(bundle, {
    endpoint: backend.endpoint(),
    tableName: backend.tableName(),
    ...config,
  });
  started.push(worker);
  return worker;
};

// Worker processes take seconds each to start on a loaded 2-core machine: allow more than the default 30 s.
describe('DynamoRateBudget across worker processes (dynalite)', { timeout: 60_000 }, () => {
  it('never holds more than the ceiling at any instant while 4 processes contend and move the budget', async () => {
    const name = `rate-contend-${randomUUID().slice(0, 8)}`;
    const ceiling = 10;
    const workers = Array.from({ length: 4 }, () =>
      spawn({ name, ceiling, leaseMs: 30_000, mode: 'contend', cycles: 12, maxWant: 6, maxHoldMs: 8 }),
    );
    await Promise.all(workers.map((w) => w.next('ready')));
    for (const w of workers) w.process.send('go');
    const reports = await Promise.all(workers.map((w) => w.next('intervals')));
    const intervals: HoldInterval[] = reports.flatMap((r) => r.intervals);

    expect(intervals).toHaveLength(4 * 12);
    const { peak, at } = peakHeld(intervals);
    expect(peak, `peak at ${at}`).toBeLessThanOrEqual(ceiling);
    // Contended: some instants saw more than one holder, so the bound above was exercised.
    expect(peakHeld(intervals.map((i) => ({ ...i, permits: 1 }))).peak).toBeGreaterThan(1);
    const item = await backend.stored(name);
    expect(item?.holders).toEqual({});
    // Every step moved budget and free together: with nothing held, all of the budget is free.
    expect(item?.free).toBe(item?.budget);
    expect(item?.budget).toBeLessThanOrEqual(ceiling);
  });

  it("makes a killed holder's rate takeable once its lease ends, and not before", async () => {
    const name = `rate-crash-${randomUUID().slice(0, 8)}`;
    const worker = spawn({ name, ceiling: 10, leaseMs: 1_500, mode: 'hold', want: 10 });
    const held = await worker.next('held');
    expect(held.permits).toBe(10);
    worker.process.kill('SIGKILL');
    await worker.exited;

    const budget = new DynamoRateBudget({
      client: backend.client(),
      tableName: backend.tableName(),
      name,
      ceiling: 10,
    });
    const lease = await budget.take(10, { least: 10, deadline: held.expiresAt + 1_000, leaseMs: 5_000 });
    expect(lease.rate).toBe(10);
    expect(Date.now()).toBeGreaterThan(held.expiresAt);
    expect(Object.keys((await backend.stored(name))?.holders ?? {})).toEqual([lease.fence]);
  });
});
