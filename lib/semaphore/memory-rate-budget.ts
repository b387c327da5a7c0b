import { throwIfAborted } from './backoff.js';
import {
  type BudgetHolder,
  type BudgetItem,
  type BudgetStep,
  floorToRateGrid,
  MAX_RECLAIM_PER_WRITE,
  onRateGrid,
} from './budget-item.js';
import type { BudgetStore } from './budget-store.js';
import { checkBudgetOptions } from './rate-budget-checks.js';
import type { RateBudget, RateLease, TakeOptions } from './rate-types.js';
import { type TakeContext, takeRate } from './take-rate.js';

interface StoredBudget {
  budget: number;
  free: number;
  decreasedAt: number;
  holders: Map<string, BudgetHolder>;
}

/** The items of every `MemoryBudgetTable`, by name (module-private: only this file's store writes them). */
const itemsOf = new WeakMap<MemoryBudgetTable, Map<string, StoredBudget>>();

/**
 * The budget items of one process, by name: what a DynamoDB table is to `DynamoRateBudget`. Budgets
 * constructed over the same table with the same name share one budget (a restart, or processes configured
 * with different ceilings).
 */
export class MemoryBudgetTable {
  constructor() {
    itemsOf.set(this, new Map());
  }

  /** A copy of budget `name`'s item as stored; `undefined` before its first take. */
  item(name: string): BudgetItem | undefined {
    const stored = itemsOf.get(this)?.get(name);
    return stored === undefined ? undefined : { ...stored, holders: new Map(stored.holders) };
  }
}

/**
 * Options of a `MemoryRateBudget`.
 * @example new MemoryRateBudget({ ceiling: 3500, name: 'prefix:bucket/t=acme/' })
 */
export interface MemoryRateBudgetOptions {
  /**
   * The most writes per second the budget may reach, and where a new budget starts; kept to a millionth.
   * @example 3500
   */
  ceiling: number;
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
   * Clock in epoch ms (lease ends, grant times, the last decrease).
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
 * The `RateBudget` contract inside one process, for tests and single-process runs: the same item, the
 * same conditional writes applied atomically in memory, the same take loop as `DynamoRateBudget` (waiters
 * poll with the same backoff on the global timers).
 */
export class MemoryRateBudget implements RateBudget {
  readonly name: string;
  readonly ceiling: number;
  readonly table: MemoryBudgetTable;
  readonly #context: TakeContext;

  constructor(options: MemoryRateBudgetOptions) {
    const name = options.name ?? 'memory';
    checkBudgetOptions({ ...options, name });
    this.name = name;
    this.ceiling = floorToRateGrid(options.ceiling);
    this.table = options.table ?? new MemoryBudgetTable();
    this.#context = {
      name,
      ceiling: this.ceiling,
      store: new MemoryBudgetStore(this.table, name),
      now: options.now ?? (() => Date.now()),
      random: options.random ?? Math.random,
      // Nothing in memory stalls: the bound is never reached.
      giveBackTimeoutMs: 2_000,
    };
  }

  take(want: number, options: TakeOptions): Promise<RateLease> {
    return takeRate(this.#context, want, options);
  }
}

/** The conditional writes of budget-item.ts, applied to the stored item in one step each. */
class MemoryBudgetStore implements BudgetStore {
  constructor(
    private readonly table: MemoryBudgetTable,
    private readonly name: string,
  ) {}

  async read(signal?: AbortSignal): Promise<BudgetItem | undefined> {
    throwIfAborted(signal);
    return this.table.item(this.name);
  }

  async create(ceiling: number, signal?: AbortSignal): Promise<void> {
    throwIfAborted(signal);
    const items = itemsOf.get(this.table);
    if (items !== undefined && !items.has(this.name))
      items.set(this.name, { budget: ceiling, free: ceiling, decreasedAt: 0, holders: new Map() });
  }

  async reclaim(
    expired: readonly (readonly [string, BudgetHolder])[],
    signal?: AbortSignal,
  ): Promise<number> {
    const item = this.#item(signal);
    const batch = expired.slice(0, MAX_RECLAIM_PER_WRITE);
    const unchanged = batch.every(([fence, seen]) => {
      const holder = item?.holders.get(fence);
      return holder !== undefined && holder.until === seen.until && holder.r === seen.r;
    });
    if (item === undefined || !unchanged) return 0;
    let freed = 0;
    for (const [fence, holder] of batch) {
      item.holders.delete(fence);
      freed = onRateGrid(freed + holder.r);
    }
    item.free = onRateGrid(item.free + freed);
    return freed;
  }

  async take(fence: string, holder: BudgetHolder, need: number, signal?: AbortSignal): Promise<boolean> {
    const item = this.#item(signal);
    if (item === undefined || !(item.free >= need) || item.holders.has(fence)) return false;
    item.holders.set(fence, holder);
    item.free = onRateGrid(item.free - holder.r);
    return true;
  }

  async release(fence: string, granted: number, signal?: AbortSignal): Promise<boolean> {
    const item = this.#item(signal);
    if (item?.holders.get(fence)?.r !== granted) return false;
    item.holders.delete(fence);
    item.free = onRateGrid(item.free + granted);
    return true;
  }

  async stepRelease(
    fence: string,
    granted: number,
    step: BudgetStep,
    signal?: AbortSignal,
  ): Promise<boolean> {
    const item = this.#item(signal);
    if (item?.holders.get(fence)?.r !== granted || item.budget !== step.read) return false;
    if (step.decrease !== undefined && !(item.decreasedAt < step.decrease.takenAt)) return false;
    item.holders.delete(fence);
    item.free = onRateGrid(item.free + granted + step.after - step.read);
    item.budget = step.after;
    if (step.decrease !== undefined) item.decreasedAt = step.decrease.now;
    return true;
  }

  #item(signal: AbortSignal | undefined): StoredBudget | undefined {
    throwIfAborted(signal);
    return itemsOf.get(this.table)?.get(this.name);
  }
}
