// npm run bench:semaphore — the fleet cap's booking cost: 1, 4, 16 and 64 concurrent holders book one
// prefix's schedule (DynamoRateBudget on dynalite), with the DynamoDB requests each booking costs and what
// that implies on real DynamoDB. Peers in the same run: MemoryRateBudget (the same booking loop in memory)
// and a floor (the booking's read and write with no condition). Each run in its own process.
import { fileURLToPath } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import dynalite from 'dynalite';
import { DynamoRateBudget } from '../lib/semaphore/index.js';
import type { HoldersConfig, HoldersResult } from './semaphore/holders.js';
import { runInChild } from './support/child.js';
import { type Row, writeResults } from './support/report.js';

const durationMs = Number(process.env.BENCH_DURATION_MS ?? 3_000);
const holderCounts = [1, 4, 16, 64];
const ceiling = 3_500;
const writesPerBooking = 20;
// DynamoDB's per-item (per-partition) throughput: 1,000 write units/s and 3,000 strongly consistent read
// units/s; the schedule item is ~100 bytes, so each request is one unit.
const itemWriteUnitsPerSecond = 1_000;
const itemReadUnitsPerSecond = 3_000;

const server = dynalite({ createTableMs: 0 });
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
const address = server.address();
if (address === null || typeof address === 'string') throw new Error('dynalite did not bind a TCP port');
const endpoint = `http://127.0.0.1:${address.port}`;
const tableName = 'semaphore-bench';
await DynamoRateBudget.createTable(
  new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  }),
  tableName,
);

const engineNames = {
  dynamo: 'DynamoRateBudget',
  memory: 'MemoryRateBudget',
  floor: 'GetItem + UpdateItem (floor)',
} as const;
const script = fileURLToPath(new URL('./semaphore/holders.ts', import.meta.url));
const rows: Row[] = [];
let run = 0;
for (const holders of holderCounts) {
  const measured: Partial<Record<HoldersConfig['engine'], { perSecond: number; p50: number }>> = {};
  for (const engine of ['floor', 'memory', 'dynamo'] as const) {
    const config: HoldersConfig = {
      engine,
      endpoint,
      tableName,
      name: `prefix:bench/t=${run++}/`,
      ceiling,
      holders,
      writesPerBooking,
      durationMs,
    };
    const { result: r } = await runInChild<HoldersResult>(script, [JSON.stringify(config)]);
    if (engine !== 'floor') {
      // The booking's promises: no two bookings share a slot, and each landed once (one version each).
      if (r.overlaps !== 0)
        throw new Error(`${engine}, ${holders} holders: ${r.overlaps} overlapping bookings`);
      if (r.storedVersion !== holders + r.bookings)
        throw new Error(
          `${engine}, ${holders} holders: version ${r.storedVersion} after ${holders} + ${r.bookings} bookings`,
        );
    }
    const perSecond = r.bookings / (r.elapsedMs / 1000);
    measured[engine] = { perSecond, p50: r.bookP50Ms };
    const row: Row = {
      engine: engineNames[engine],
      holders,
      'bookings/s': perSecond,
      'book p50 ms': r.bookP50Ms,
      'book p99 ms': r.bookP99Ms,
      'x floor': perSecond / measured.floor!.perSecond,
      // In memory a booking takes microseconds: its latency against the emulator's says nothing.
      'p50 x floor': engine === 'memory' ? null : r.bookP50Ms / measured.floor!.p50,
      'slot overlaps': engine === 'floor' ? null : r.overlaps,
    };
    if (engine === 'dynamo') {
      const reads = r.reads / r.bookings;
      const writes = r.writes / r.bookings;
      Object.assign(row, {
        'memory x': measured.memory!.perSecond / perSecond,
        'reads/booking': reads,
        'writes/booking': writes,
        'cond. failures/booking': r.conditionalFailures / r.bookings,
        'requests / S3 write': (reads + writes) / writesPerBooking,
        'DynamoDB ceiling bookings/s': Math.round(
          Math.min(itemWriteUnitsPerSecond / writes, itemReadUnitsPerSecond / reads),
        ),
      });
    }
    rows.push(row);
    console.error(JSON.stringify(row));
  }
}
server.close();

writeResults('semaphore', rows, {
  durationMsPerRun: durationMs,
  ceiling,
  writesPerBooking,
  notes: [
    `Holders are async loops in one child process per run, each booking ${writesPerBooking} writes on one prefix's schedule at ${ceiling} writes/s and reporting a clean round, without writing: the run measures the booking, not the slots' time, and the schedule runs ahead as under demand above the budget. Every holder is always booking: the most contention that many holders can make on one item.`,
    'dynalite shares 2 cores with the holders (and, here, with other work): bookings/s and latencies are emulator-bound and noisy; the requests per booking are the portable result.',
    'DynamoRateBudget holders each have their own DynamoDBClient, as Lambda containers do; cross-process correctness is covered by test/integration/semaphore/rate-budget-processes.test.ts.',
    'Checked every run (the bench fails otherwise): no two bookings share a slot (slot overlaps = 0), and the stored schedule version equals the bookings made (each landed once; reports at the ceiling move nothing and write nothing).',
    'The floor does the booking\'s two requests (a strongly consistent GetItem, then an UpdateItem) with no condition and no backoff: what dynalite on this machine allows at all. "x floor" and "p50 x floor" are each engine\'s bookings/s and median booking latency relative to it at the same holders; "memory x" is how many times more bookings/s MemoryRateBudget made, the same booking loop in memory.',
    'reads/writes per booking count every request sent, failed conditional writes included (they consume write units on DynamoDB); a lost race reads again after a jittered 20-200 ms backoff.',
    `DynamoDB ceiling = min(${itemWriteUnitsPerSecond} write units/s / writes per booking, ${itemReadUnitsPerSecond} read units/s / reads per booking) for the one schedule item (~100 bytes: one unit per request).`,
    `requests / S3 write = (reads + writes per booking) / ${writesPerBooking} writes booked.`,
  ],
});
