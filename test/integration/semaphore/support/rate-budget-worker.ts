// A separate OS process that books one DynamoRateBudget's schedule, driven by the tests through fork() IPC.
//   book: report 'ready', wait for 'go', make `bookings` bookings of 1..`maxWrites` writes on its own clock
//         (Date.now() + `skewMs`), report each one (a clean round, or every `decreaseEvery`-th an overloaded
//         one), and send back every booking's slots ('booked'). With `holdSlots`, it waits until each
//         booking's slots end before booking again, as a holder writing them does, so workers take turns.
//   hold: make one booking of `writes` writes, send it ('held'), then wait to be killed.
import { setTimeout as sleep } from 'node:timers/promises';
import { DynamoRateBudget, type WriteRound } from '../../../../lib/semaphore/index.js';
import { sendToTest, workerClient, workerConfig } from './worker-process.js';

export interface RateWorkerConfig {
  endpoint: string;
  tableName: string;
  name: string;
  ceiling: number;
  mode: 'book' | 'hold';
  bookings?: number;
  maxWrites?: number;
  writes?: number;
  /** Every this many bookings reports an overloaded round (half refused); 0: none. */
  decreaseEvery?: number;
  /** The worker's clock is this far ahead of the machine's (negative: behind). */
  skewMs?: number;
  /** Wait until each booking's slots end (on the worker's clock) before the next booking. */
  holdSlots?: boolean;
}

/** One booking's slots, on the worker's clock. */
export interface BookedSlots {
  rate: number;
  startAt: number;
  endsAt: number;
  writes: number;
}

export type RateWorkerMessage =
  | { type: 'ready' }
  | { type: 'booked'; bookings: BookedSlots[] }
  | { type: 'held'; booking: BookedSlots };

const config = workerConfig<RateWorkerConfig>();
const send = (message: RateWorkerMessage) => sendToTest(message);
const skewMs = config.skewMs ?? 0;
const now = () => Date.now() + skewMs;
const budget = new DynamoRateBudget({
  client: workerClient(config.endpoint),
  tableName: config.tableName,
  name: config.name,
  ceiling: config.ceiling,
  now,
});
const slotsOf = ({ rate, startAt, endsAt, writes }: BookedSlots): BookedSlots => ({
  rate,
  startAt,
  endsAt,
  writes,
});
const randomInt = (lo: number, hi: number) => lo + Math.floor(Math.random() * (hi - lo + 1));
const CLEAN: WriteRound = { accepted: 20, throttled: 0, starved: false };
const OVERLOADED: WriteRound = { accepted: 10, throttled: 10, starved: false };

if (config.mode === 'book') {
  // Start all workers' bookings together (process start-up times differ by seconds on a loaded machine).
  const go = new Promise((resolve) => process.once('message', resolve));
  await send({ type: 'ready' });
  await go;
  const bookings: BookedSlots[] = [];
  const every = config.decreaseEvery ?? 0;
  for (let i = 1; i <= (config.bookings ?? 10); i++) {
    const booking = await budget.book({
      writes: randomInt(1, config.maxWrites ?? 1),
      // Never out of turn: decreases stretch the slots booked ahead, and the test wants every booking.
      latestStart: now() + 3_600_000,
      writeBy: now() + 36_000_000,
    });
    bookings.push(slotsOf(booking));
    if (config.holdSlots) await sleep(Math.max(0, booking.endsAt - now()));
    await booking.report(every > 0 && i % every === 0 ? OVERLOADED : CLEAN);
  }
  await send({ type: 'booked', bookings });
  process.exit(0);
} else {
  const booking = await budget.book({
    writes: config.writes ?? 1,
    latestStart: now() + 60_000,
    writeBy: now() + 600_000,
  });
  await send({ type: 'held', booking: slotsOf(booking) });
  // Held until the test kills the process.
  setInterval(() => {}, 60_000);
}
