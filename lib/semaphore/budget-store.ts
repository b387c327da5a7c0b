import type { BudgetHolder, BudgetItem, BudgetStep } from './budget-item.js';

/**
 * What a rate budget's take and release need of its item (budget-item.ts): one read and the conditional
 * writes. Every call carries the caller's signal; a write resolves `false` when its condition failed and
 * rejects on anything else. Implemented over DynamoDB (`DynamoRateBudget`) and in memory (`MemoryRateBudget`).
 */
export interface BudgetStore {
  /** The item now (strongly consistent); `undefined` when it does not exist yet. */
  read(signal?: AbortSignal): Promise<BudgetItem | undefined>;
  /** Creates the item at `ceiling` unless it exists. */
  create(ceiling: number, signal?: AbortSignal): Promise<void>;
  /** Removes up to 25 of the `expired` holders, each if unchanged; resolves the rate freed (0: lost a race). */
  reclaim(expired: readonly (readonly [string, BudgetHolder])[], signal?: AbortSignal): Promise<number>;
  /** Adds `holder` as lease `fence` when `free >= need` and the fence holds nothing. */
  take(fence: string, holder: BudgetHolder, need: number, signal?: AbortSignal): Promise<boolean>;
  /** Gives `granted` back while the entry holds it. */
  release(fence: string, granted: number, signal?: AbortSignal): Promise<boolean>;
  /** Gives `granted` back and moves the budget by `step`, on the conditions of `stepReleaseRequest`. */
  stepRelease(fence: string, granted: number, step: BudgetStep, signal?: AbortSignal): Promise<boolean>;
}
