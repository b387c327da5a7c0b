// A separate OS process that uses one DynamoRateBudget, driven by the tests through fork() IPC.
//   contend: report 'ready', wait for 'go', run `cycles` take/hold/release cycles and send back every hold
//            interval (its rate as `permits`); releases report a mix of clean, starved and overloaded leases.
//   hold:    take `want`, report the lease ('held'), then wait to be killed.
import { DynamoRateBudget, type LeaseReport } from '../../../../lib/semaphore/index.js';
import type { WorkerMessage } from './semaphore-worker.js';
import type { HoldInterval } from './timeline.js';
import { sendToTest, workerClient, workerConfig } from './worker-process.js';

export interface RateWorkerConfig {
  endpoint: string;
  tableName: string;
  name: string;
  ceiling: number;
  leaseMs: number;
  mode: 'contend' | 'hold';
  cycles?: number;
  maxWant?: number;
  maxHoldMs?: number;
  want?: number;
}

const config = workerConfig<RateWorkerConfig>();
const send = (message: WorkerMessage) => sendToTest(message);
const budget = new DynamoRateBudget({
  client: workerClient(config.endpoint),
  tableName: config.tableName,
  name: config.name,
  ceiling: config.ceiling,
});
const randomInt = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo + 1));
const reports: LeaseReport[] = [
  { accepted: 20, throttled: 0, starved: false },
  { accepted: 20, throttled: 0, starved: true },
  { accepted: 10, throttled: 10, starved: false },
];

if (config.mode === 'contend') {
  // Start all workers' cycles together (process start-up times differ by seconds on a loaded machine).
  const go = new Promise((resolve) => process.once('message', resolve));
  await send({ type: 'ready' });
  await go;
  const intervals: HoldInterval[] = [];
  for (let i = 0; i < (config.cycles ?? 10); i++) {
    const want = randomInt(1, config.maxWant ?? 1);
    const lease = await budget.take(want, {
      least: 1,
      deadline: Date.now() + 20_000,
      leaseMs: config.leaseMs,
    });
    const start = Date.now();
    await new Promise((resolve) => setTimeout(resolve, randomInt(0, config.maxHoldMs ?? 5)));
    const end = Date.now();
    if (end >= lease.expiresAt) throw new Error('held past the lease; the test would not be meaningful');
    await lease.release(reports[i % reports.length]!);
    intervals.push({ start, end, permits: lease.rate });
  }
  await send({ type: 'intervals', intervals });
  process.exit(0);
} else {
  const lease = await budget.take(config.want ?? 1, {
    least: config.want ?? 1,
    deadline: Date.now() + 20_000,
    leaseMs: config.leaseMs,
  });
  await send({ type: 'held', fence: lease.fence, permits: lease.rate, expiresAt: lease.expiresAt });
  // Held until the test kills the process.
  setInterval(() => {}, 60_000);
}
