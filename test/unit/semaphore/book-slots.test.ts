// The booking loop and a booking's steps over a scripted store (BudgetStore): lost races, a store whose
// item vanishes, a clock that runs out, another holder's decrease or increase in between.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { bookSlots, landed } from '../../../lib/semaphore/book-slots.js';
import type { BudgetContext, BudgetStore } from '../../../lib/semaphore/budget-store.js';
import { SemaphoreTimeoutError } from '../../../lib/semaphore/errors.js';
import type { Schedule, ScheduleChange } from '../../../lib/semaphore/rate-schedule.js';
import type { WriteRound } from '../../../lib/semaphore/rate-types.js';

const T0 = 1_000_000;
const CLEAN: WriteRound = { accepted: 10, throttled: 0, starved: false };
const HALF_REFUSED: WriteRound = { accepted: 10, throttled: 10, starved: false };

/**
 * A store over one schedule: `write` applies a change conditionally, as DynamoDB does; `beforeWrite` runs
 * just before each write is applied (another holder's write landing first makes it a lost race).
 */
class ScriptedStore implements BudgetStore {
  item: Schedule | undefined;
  reads = 0;
  writes: { change: ScheduleChange; by: string; applied: boolean }[] = [];
  beforeWrite: (() => void) | undefined;
  readAnswer: (() => Schedule | undefined) | undefined;

  constructor(item?: Schedule) {
    this.item = item;
  }

  async read(signal?: AbortSignal): Promise<Schedule | undefined> {
    signal?.throwIfAborted();
    this.reads++;
    return this.readAnswer?.() ?? this.item;
  }

  async create(ceiling: number): Promise<void> {
    this.item ??= { rate: ceiling, freeAt: 0, decreasedAt: 0, version: 0, by: '' };
  }

  async write(read: Schedule, change: ScheduleChange, by: string): Promise<boolean> {
    this.beforeWrite?.();
    const applied = this.item?.version === read.version;
    if (applied) this.item = { ...change, version: read.version + 1, by };
    this.writes.push({ change, by, applied });
    return applied;
  }

  /** Another holder's write: `change` lands as the next version. */
  landOther(change: Partial<ScheduleChange>): void {
    const item = this.item!;
    this.item = { ...item, ...change, version: item.version + 1, by: 'other' };
  }
}

function contextOn(store: BudgetStore, ceiling = 10): BudgetContext {
  return {
    name: 'prefix:b/t=acme/',
    ceiling,
    startRate: ceiling,
    store,
    now: () => Date.now(),
    random: () => 0.999,
    reportTimeoutMs: 500,
  };
}

const schedule = (over: Partial<Schedule> = {}): Schedule => ({
  rate: 10,
  freeAt: 0,
  decreasedAt: 0,
  version: 1,
  by: 'x',
  ...over,
});

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('bookSlots over a store', () => {
  it('a lost race backs off, reads again and books after the write that won', async () => {
    const store = new ScriptedStore(schedule());
    // The first write loses to another holder's booking of [T0, T0 + 500).
    store.beforeWrite = () => {
      store.beforeWrite = undefined;
      store.landOther({ freeAt: T0 + 500 });
    };
    const booking = bookSlots(contextOn(store), { writes: 3, latestStart: T0 + 5_000, writeBy: T0 + 60_000 });
    await vi.runAllTimersAsync();

    await expect(booking).resolves.toMatchObject({ startAt: T0 + 500, endsAt: T0 + 800, writes: 3 });
    expect(store.writes.map((w) => w.applied)).toEqual([false, true]);
    // Read, lost, read to see whether it landed after all, then read again after the backoff.
    expect(store.reads).toBe(3);
  });

  it('a lost race found at its latest start rejects without a first free slot, and books nothing', async () => {
    const store = new ScriptedStore(schedule());
    store.beforeWrite = () => {
      store.landOther({ freeAt: T0 + 500 });
      // The race took until the latest start.
      vi.setSystemTime(T0 + 100);
    };
    const booking = bookSlots(contextOn(store), { writes: 3, latestStart: T0 + 100, writeBy: T0 + 60_000 });
    const rejected = expect(booking).rejects.toBeInstanceOf(SemaphoreTimeoutError);
    await vi.runAllTimersAsync();
    await rejected;
    await expect(booking).rejects.toMatchObject({ freeAt: undefined, deadline: T0 + 100 });
    expect(store.writes.filter((w) => w.applied && w.by !== 'other')).toEqual([]);
  });

  it('waits after a lost race no later than its latest start', async () => {
    const store = new ScriptedStore(schedule());
    const readAt: number[] = [];
    store.readAnswer = () => {
      readAt.push(Date.now() - T0);
      return undefined;
    };
    store.beforeWrite = () => {
      store.beforeWrite = undefined;
      store.landOther({});
    };
    // The backoff would wait about 20 ms; the latest start is 5 ms away.
    const booking = bookSlots(contextOn(store), { writes: 1, latestStart: T0 + 5, writeBy: T0 + 60_000 });
    await vi.runAllTimersAsync();
    await expect(booking).resolves.toMatchObject({ startAt: T0 + 5 });
    expect(readAt).toEqual([0, 0, 5]);
  });

  it('an already aborted signal rejects with its reason before any read', async () => {
    const store = new ScriptedStore(schedule());
    const controller = new AbortController();
    const reason = new Error('cutoff');
    controller.abort(reason);
    await expect(
      bookSlots(contextOn(store), {
        writes: 1,
        latestStart: T0 + 5_000,
        writeBy: T0 + 60_000,
        signal: controller.signal,
      }),
    ).rejects.toBe(reason);
    expect(store.reads).toBe(0);
  });

  it('an item that is still missing after its creation is an error naming the budget', async () => {
    const store = new ScriptedStore();
    store.readAnswer = () => undefined;
    store.create = async () => {};
    await expect(
      bookSlots(contextOn(store), { writes: 1, latestStart: T0 + 5_000, writeBy: T0 + 60_000 }),
    ).rejects.toMatchObject({ message: 'rate budget "prefix:b/t=acme/": its item vanished after creation' });
  });
});

describe('landed: a write whose condition failed', () => {
  it('landed all the same when the item says it wrote the very next version', async () => {
    const store = new ScriptedStore(schedule({ version: 1 }));
    const read = store.item!;
    store.item = { ...read, version: 2, by: 'me' };
    await expect(landed(store, read, { rate: 10, freeAt: 5, decreasedAt: 0 }, 'me', undefined)).resolves.toBe(
      true,
    );
  });

  it('did not land when another wrote, or when its id wrote a later version, or when the item is gone', async () => {
    const store = new ScriptedStore(schedule({ version: 1 }));
    const read = store.item!;
    const change = { rate: 10, freeAt: 5, decreasedAt: 0 };
    store.item = { ...read, version: 2, by: 'other' };
    await expect(landed(store, read, change, 'me', undefined)).resolves.toBe(false);
    store.item = { ...read, version: 3, by: 'me' };
    await expect(landed(store, read, change, 'me', undefined)).resolves.toBe(false);
    store.item = undefined;
    store.write = async () => false;
    await expect(landed(store, read, change, 'me', undefined)).resolves.toBe(false);
  });
});

describe('a booking steps the schedule', () => {
  it('returns the booking rate and moves nothing when the item has vanished', async () => {
    const store = new ScriptedStore(schedule());
    const booking = await bookSlots(contextOn(store), {
      writes: 1,
      latestStart: T0 + 5_000,
      writeBy: T0 + 60_000,
    });
    store.item = undefined;
    await expect(booking.step(HALF_REFUSED)).resolves.toEqual({ rate: 10, decreasedAt: 0 });
    expect(store.writes).toHaveLength(1);
  });

  it('a round the law holds writes nothing and answers the stored schedule', async () => {
    const store = new ScriptedStore(schedule({ decreasedAt: 7 }));
    const booking = await bookSlots(contextOn(store), {
      writes: 1,
      latestStart: T0 + 5_000,
      writeBy: T0 + 60_000,
    });
    await expect(booking.step(CLEAN)).resolves.toEqual({ rate: 10, decreasedAt: 7 });
    expect(store.writes).toHaveLength(1);
  });

  it("after another holder's increase, its own overloaded round is stale: it cuts nothing", async () => {
    const store = new ScriptedStore(schedule());
    const booking = await bookSlots(contextOn(store, 20), {
      writes: 1,
      latestStart: T0 + 5_000,
      writeBy: T0 + 60_000,
    });
    store.landOther({ rate: 12 });
    await expect(booking.step(CLEAN)).resolves.toMatchObject({ rate: 12 });
    await expect(booking.step(HALF_REFUSED)).resolves.toMatchObject({ rate: 12 });
    expect(store.item?.rate).toBe(12);
  });

  it("told to, follows another holder's increase: its later rounds step from the raised rate", async () => {
    const store = new ScriptedStore(schedule({ decreasedAt: 1 }));
    const booking = await bookSlots(contextOn(store, 20), {
      writes: 1,
      latestStart: T0 + 5_000,
      writeBy: T0 + 60_000,
    });
    store.landOther({ rate: 12 });
    // At its first slot it reads the schedule and takes the raised rate.
    await expect(booking.step(CLEAN, { followIncrease: true })).resolves.toMatchObject({ rate: 12 });
    // Its round from there ran at 12 writes/s: overloaded there, it cuts the schedule from 12.
    await expect(booking.step(HALF_REFUSED)).resolves.toMatchObject({ rate: 6 });
    expect(store.item?.rate).toBe(6);
  });

  it("follows another holder's decrease made on a clock ahead of its own, and may then cut from the new rate", async () => {
    const store = new ScriptedStore(schedule());
    const booking = await bookSlots(contextOn(store), {
      writes: 1,
      latestStart: T0 + 5_000,
      writeBy: T0 + 60_000,
    });
    // Another process, its clock 50 ms ahead, halved the rate.
    store.landOther({ rate: 5, decreasedAt: T0 + 50 });
    await expect(booking.step(CLEAN)).resolves.toEqual({ rate: 5, decreasedAt: T0 + 50 });
    // Its next round was measured at 5 writes/s: overloaded there, it cuts again, though its clock has
    // not reached the other's decrease.
    await expect(booking.step(HALF_REFUSED)).resolves.toMatchObject({ rate: 2.5, decreasedAt: T0 });
    expect(store.item?.rate).toBe(2.5);
  });
});
