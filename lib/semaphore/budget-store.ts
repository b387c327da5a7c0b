import type { Schedule, ScheduleChange } from './rate-schedule.js';

/**
 * What a rate budget needs of its item (budget-item.ts): one read and one conditional write. Every call
 * carries the caller's signal. Implemented over DynamoDB (`DynamoRateBudget`) and in memory
 * (`MemoryRateBudget`).
 */
export interface BudgetStore {
  /** The schedule now (strongly consistent); `undefined` when the item does not exist yet. */
  read(signal?: AbortSignal): Promise<Schedule | undefined>;
  /** Creates the item at `rate` unless it exists. */
  create(rate: number, signal?: AbortSignal): Promise<void>;
  /**
   * Writes `change` as writer `by` if the item is still version `read.version`: `true` when it applied,
   * `false` when its condition failed; rejects on anything else (the write may then have applied or not).
   */
  write(read: Schedule, change: ScheduleChange, by: string, signal?: AbortSignal): Promise<boolean>;
}

/** What a budget's bookings and reports need: its store, its clock and its jitter. */
export interface BudgetContext {
  readonly name: string;
  readonly ceiling: number;
  /** Where a budget whose item is missing starts (at most `ceiling`). */
  readonly startRate: number;
  readonly store: BudgetStore;
  readonly now: () => number;
  readonly random: () => number;
  /** Bound on a report called without a signal. */
  readonly reportTimeoutMs: number;
}
