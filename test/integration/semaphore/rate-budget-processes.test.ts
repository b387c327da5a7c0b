// DynamoRateBudget across worker processes (the real lib code bundled with esbuild, forked as separate Node
// processes) booking one prefix's schedule on one dynalite: no two bookings share a slot, the slots that
// start in any second never exceed the rate, a decrease keeps both true, clocks that disagree shift slots
// by no more than their skew, and a killed holder costs the fleet at most its own slots.
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DynamoRateBudget } from '../../../lib/semaphore/index.js';
import { fileTempDir } from '../../support/temp-dir.js';
import { dynamoBackend, overlapping, peakSlots, slotsOf } from './support/budget.js';
import type { BookedSlots, RateWorkerConfig, RateWorkerMessage } from './support/rate-budget-worker.js';
import { bundleWorker, startWorker, type Worker } from './support/workers.js';

const backend = dynamoBackend();
const workerDir = fileTempDir('rate-budget-worker');
let bundle: string;
const started: Worker<RateWorkerMessage>[] = [];

beforeAll(async () => {
  const source = fileURLToPath(new URL('./support/rate-budget-worker.ts', import.meta.url));
  [, bundle] = await Promise.all([backend.setup(), bundleWorker(workerDir, source)]);
});

afterEach(async () => {
  for (const worker of started.splice(0)) {
    if (worker.process.exitCode === null && worker.process.signalCode === null)
      worker.process.kill('SIGKILL');
    await worker.exited;
  }
});

const spawn = (config: Omit<RateWorkerConfig, 'endpoint' | 'tableName'>) => {
  const worker = startWorker<RateWorkerMessage>(bundle, {
    endpoint: backend.endpoint(),
    tableName: backend.tableName(),
    ...config,
  });
  started.push(worker);
  return worker;
};

/** Starts `configs.length` booking workers together and gathers their bookings, each tagged with its worker. */
async function bookTogether(configs: Omit<RateWorkerConfig, 'endpoint' | 'tableName' | 'mode'>[]) {
  const workers = configs.map((config) => spawn({ ...config, mode: 'book' }));
  await Promise.all(workers.map((w) => w.next('ready')));
  for (const w of workers) w.process.send('go');
  const answers = await Promise.all(workers.map((w) => w.next('booked')));
  return answers.flatMap((answer, worker) => answer.bookings.map((booking) => ({ ...booking, worker })));
}

/** How many times consecutive bookings on the schedule come from different workers. */
const handOvers = (bookings: readonly (BookedSlots & { worker: number })[]) =>
  [...bookings]
    .sort((a, b) => a.startAt - b.startAt)
    .filter((booking, i, sorted) => i > 0 && booking.worker !== sorted[i - 1]!.worker).length;

// Worker processes take seconds each to start on a loaded 2-core machine: allow more than the default 30 s.
describe('DynamoRateBudget across worker processes (dynalite)', { timeout: 60_000 }, () => {
  it('4 processes booking one schedule: no two bookings share a slot, and no second holds more slots than the rate', async () => {
    const name = `rate-book-${randomUUID().slice(0, 8)}`;
    const ceiling = 200;
    const bookings = await bookTogether(
      Array.from({ length: 4 }, () => ({ name, ceiling, bookings: 15, maxWrites: 30, holdSlots: true })),
    );

    expect(bookings).toHaveLength(60);
    // The processes took turns on one schedule: their bookings interleave.
    expect(handOvers(bookings)).toBeGreaterThan(3);
    expect(overlapping(bookings)).toEqual([]);
    expect(bookings.every((b) => b.rate === ceiling)).toBe(true);
    expect(peakSlots(bookings.flatMap(slotsOf))).toBeLessThanOrEqual(ceiling);
    // Every booking is one write that landed once; a clean report writes nothing.
    expect(await backend.stored(name)).toMatchObject({
      rate: ceiling,
      version: 60,
      freeAt: Math.max(...bookings.map((b) => b.endsAt)),
    });
  });

  it('while reports decrease the rate, bookings still never share a slot nor exceed the ceiling', async () => {
    const name = `rate-decrease-${randomUUID().slice(0, 8)}`;
    const ceiling = 200;
    const bookings = await bookTogether(
      Array.from({ length: 3 }, () => ({ name, ceiling, bookings: 12, maxWrites: 20, decreaseEvery: 4 })),
    );

    expect(bookings).toHaveLength(36);
    const stored = await backend.stored(name);
    // The rate moved, and bookings were made at more than one rate.
    expect(stored?.rate).toBeLessThan(ceiling);
    expect(new Set(bookings.map((b) => b.rate)).size).toBeGreaterThan(1);
    expect(overlapping(bookings)).toEqual([]);
    expect(peakSlots(bookings.flatMap(slotsOf))).toBeLessThanOrEqual(ceiling);
    // A booking never starts before the first free slot a decrease moved out: the latest one ends the schedule.
    expect(stored?.freeAt).toBeGreaterThanOrEqual(Math.max(...bookings.map((b) => b.endsAt)));
  });

  it('processes whose clocks disagree by up to 50 ms overlap their slots by no more than that', async () => {
    const name = `rate-skew-${randomUUID().slice(0, 8)}`;
    const ceiling = 200;
    const skews = [0, 25, -25];
    const booked = await bookTogether(
      skews.map((skewMs) => ({ name, ceiling, bookings: 30, maxWrites: 20, skewMs, holdSlots: true })),
    );
    // On the machine's clock: a worker's slots are its own clock's.
    const bookings = booked.map((b) => ({
      ...b,
      startAt: b.startAt - skews[b.worker]!,
      endsAt: b.endsAt - skews[b.worker]!,
    }));

    expect(handOvers(bookings)).toBeGreaterThan(3);
    const overlaps = overlapping(bookings).map(([a, b]) => Math.min(a.endsAt, b.endsAt) - b.startAt);
    // A clock ahead booked after one behind it, so the bound was exercised.
    expect(Math.max(0, ...overlaps)).toBeGreaterThan(0);
    expect(Math.max(0, ...overlaps)).toBeLessThanOrEqual(50);
    // At most 50 ms of a second's slots start twice.
    expect(peakSlots(bookings.flatMap(slotsOf))).toBeLessThanOrEqual(ceiling + (50 * ceiling) / 1000);
  });

  it('a killed holder costs the fleet at most its own slots: the next booking starts where they end', async () => {
    const name = `rate-crash-${randomUUID().slice(0, 8)}`;
    const worker = spawn({ name, ceiling: 100, mode: 'hold', writes: 300 });
    const { booking: held } = await worker.next('held');
    worker.process.kill('SIGKILL');
    await worker.exited;

    const budget = new DynamoRateBudget({
      client: backend.client(),
      tableName: backend.tableName(),
      name,
      ceiling: 100,
    });
    const now = Date.now();
    const next = await budget.book({ writes: 10, latestStart: now + 60_000, writeBy: now + 600_000 });
    expect(next.startAt).toBe(Math.max(held.endsAt, next.bookedAt));
    expect(held.endsAt).toBeGreaterThan(now);
    // Nothing to reclaim: the item is the same constant-size schedule, two writes in.
    expect(await backend.stored(name)).toMatchObject({ rate: 100, version: 2, freeAt: next.endsAt });
  });
});
