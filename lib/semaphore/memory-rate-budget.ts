import { throwIfAborted } from './backoff.js';
import { bookSlots } from './book-slots.js';
import { newSchedule } from './budget-item.js';
import type { BudgetContext, BudgetStore } from './budget-store.js';
import { checkBudgetOptions, startRateOf } from './rate-budget-checks.js';
import { floorToRateGrid, type Schedule, type ScheduleChange } from './rate-schedule.js';
import type { BookOptions, RateBooking, RateBudget } from './rate-types.js';

/** The schedules of every `MemoryBudgetTable`, by name (module-private: only this file's store writes them). */
const itemsOf = new WeakMap<MemoryBudgetTable, Map<string, Schedule>>();

/**
 * The budget items of one process, by name: what a DynamoDB table is to `DynamoRateBudget`. Budgets
 * constructed over the same table with the same name share one schedule (a restart, or processes configured
 * with different ceilings).
 */
export class MemoryBudgetTable {
  constructor() {
    itemsOf.set(this, new Map());
  }

  /** Budget `name`'s schedule as stored; `undefined` before its first booking. */
  item(name: string): Schedule | undefined {
    return itemsOf.get(this)?.get(name);
  }
}

/**
 * Options of a `MemoryRateBudget`.
 * @example new MemoryRateBudget({ ceiling: 3500, name: 'prefix:bucket/t=acme/' })
 */
export interface MemoryRateBudgetOptions {
  /**
   * The most writes per second the budget may reach, and where a new budget starts unless `startRate` says
   * otherwise; kept to a millionth.
   * @example 3500
   */
  ceiling: number;
  /**
   * Where a budget whose item does not exist yet starts, writes per second (at most `ceiling`; kept to a
   * millionth, and at least `ceiling x MIN_BUDGET_SHARE`): a prefix S3 has not scaled for starts inside
   * what S3 gives it, and the control law raises it as its holders are starved and nothing is refused
   * (docs/fleet-cap.md#the-control-law). Only creates: an existing item keeps its rate.
   * @default ceiling
   * @example 3500 / 16 // one of 16 stripes that start together inside one S3 partition's limit
   */
  startRate?: number | undefined;
  /**
   * What the budget is for (shown in errors; budgets of one `table` share by name).
   * @default 'memory'
   * @example 'prefix:bucket/t=acme/'
   */
  name?: string;
  /**
   * Where the budget lives: pass one table to several budgets to share it, as processes share a DynamoDB table.
   * @default a table of its own
   * @example new MemoryBudgetTable()
   */
  table?: MemoryBudgetTable;
  /**
   * Clock in epoch ms (slots, the last decrease).
   * @default Date.now
   * @example () => clock.now()
   */
  now?: () => number;
  /**
   * Uniform [0, 1) source of the backoff's jitter.
   * @default Math.random
   * @example () => 0.5
   */
  random?: () => number;
}

/**
 * The `RateBudget` contract inside one process, for tests and single-process runs: the same schedule, the
 * same conditional write applied atomically in memory, the same booking loop as `DynamoRateBudget`.
 */
export class MemoryRateBudget implements RateBudget {
  readonly name: string;
  readonly ceiling: number;
  readonly table: MemoryBudgetTable;
  readonly #context: BudgetContext;

  constructor(options: MemoryRateBudgetOptions) {
    const name = options.name ?? 'memory';
    checkBudgetOptions({ ...options, name });
    this.name = name;
    this.ceiling = floorToRateGrid(options.ceiling);
    this.table = options.table ?? new MemoryBudgetTable();
    this.#context = {
      name,
      ceiling: this.ceiling,
      startRate: startRateOf(options.startRate, this.ceiling),
      store: new MemoryBudgetStore(this.table, name),
      now: options.now ?? (() => Date.now()),
      random: options.random ?? Math.random,
      // Nothing in memory stalls: the bound is never reached.
      reportTimeoutMs: 2_000,
    };
  }

  book(options: BookOptions): Promise<RateBooking> {
    return bookSlots(this.#context, options);
  }
}

/** The conditional write of budget-item.ts, applied to the stored schedule in one step. */
class MemoryBudgetStore implements BudgetStore {
  constructor(
    private readonly table: MemoryBudgetTable,
    private readonly name: string,
  ) {}

  async read(signal?: AbortSignal): Promise<Schedule | undefined> {
    throwIfAborted(signal);
    return this.table.item(this.name);
  }

  async create(rate: number, signal?: AbortSignal): Promise<void> {
    throwIfAborted(signal);
    const items = itemsOf.get(this.table);
    if (items !== undefined && !items.has(this.name)) items.set(this.name, newSchedule(rate));
  }

  async write(read: Schedule, change: ScheduleChange, by: string, signal?: AbortSignal): Promise<boolean> {
    throwIfAborted(signal);
    const items = itemsOf.get(this.table);
    const stored = items?.get(this.name);
    if (items === undefined || stored?.version !== read.version) return false;
    items.set(this.name, { ...change, version: read.version + 1, by });
    return true;
  }
}
