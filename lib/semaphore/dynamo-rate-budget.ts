import {
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
  type UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import {
  type BudgetHolder,
  type BudgetItem,
  type BudgetStep,
  createBudgetRequest,
  floorToRateGrid,
  parseBudgetItem,
  readBudgetRequest,
  reclaimRequest,
  releaseRequest,
  stepReleaseRequest,
  takeRequest,
} from './budget-item.js';
import type { BudgetStore } from './budget-store.js';
import { SemaphoreTableNotFoundError } from './errors.js';
import { checkBudgetOptions } from './rate-budget-checks.js';
import type { RateBudget, RateLease, TakeOptions } from './rate-types.js';
import { type TakeContext, takeRate } from './take-rate.js';

/**
 * Options of a `DynamoRateBudget`.
 * @example
 * new DynamoRateBudget({ client, tableName: 'semaphores', name: 'prefix:bucket/t=acme/', ceiling: 3500 })
 */
export interface DynamoRateBudgetOptions {
  /**
   * The DynamoDB client (one per container, shared). Every request of a call carries the call's signal.
   * @example new DynamoDBClient({})
   */
  client: DynamoDBClient;
  /**
   * The semaphore table: string partition key `pk`, string sort key `sk` (`DynamoSemaphore.createTable`).
   * The budget is one item, `pk = rate#<name>`, `sk = budget`.
   * @example 'semaphores'
   */
  tableName: string;
  /**
   * What the budget is for: every process naming the same budget shares it.
   * @example 'prefix:bucket/t=acme/'
   */
  name: string;
  /**
   * The most writes per second the budget may reach, and where a new budget starts (`S3_PREFIX_WRITE_RATE`);
   * kept to a millionth. A process configured lower than a stored budget grants only what a budget at its
   * ceiling would allow, and its releases bring the budget down to it.
   * @example 3500
   */
  ceiling: number;
  /**
   * Clock in epoch ms: lease ends, grant times and the last decrease are stored as such.
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
  /**
   * Bound in ms on a release called without a signal, and on giving back a take whose answer was lost
   * (the caller's signal may be why it is given back). What cannot be given back expires with its lease.
   * @default 2000
   * @example 500
   */
  giveBackTimeoutMs?: number;
}

/**
 * A prefix's fleet-wide write budget in one DynamoDB item (docs/fleet-cap.md): a take costs one strongly
 * consistent read and one conditional write, a release one conditional write (two when its budget step is
 * dropped). Waiters re-read with full-jitter backoff.
 */
export class DynamoRateBudget implements RateBudget {
  readonly name: string;
  readonly ceiling: number;
  readonly tableName: string;
  readonly #context: TakeContext;

  constructor(options: DynamoRateBudgetOptions) {
    checkBudgetOptions(options);
    this.name = options.name;
    this.ceiling = floorToRateGrid(options.ceiling);
    this.tableName = options.tableName;
    this.#context = {
      name: this.name,
      ceiling: this.ceiling,
      store: new DynamoBudgetStore(options.client, options.tableName, options.name),
      now: options.now ?? (() => Date.now()),
      random: options.random ?? Math.random,
      giveBackTimeoutMs: options.giveBackTimeoutMs ?? 2_000,
    };
  }

  take(want: number, options: TakeOptions): Promise<RateLease> {
    return takeRate(this.#context, want, options);
  }
}

const isNamed = (err: unknown, name: string) => (err as { name?: unknown } | null)?.name === name;

/** The budget item's requests sent to DynamoDB; a missing table becomes `SemaphoreTableNotFoundError`. */
class DynamoBudgetStore implements BudgetStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
    private readonly name: string,
  ) {}

  async read(signal?: AbortSignal): Promise<BudgetItem | undefined> {
    const command = new GetItemCommand(readBudgetRequest(this.tableName, this.name));
    const answer = await this.#guard(this.client.send(command, { abortSignal: signal }));
    return parseBudgetItem(answer.Item);
  }

  async create(ceiling: number, signal?: AbortSignal): Promise<void> {
    const command = new PutItemCommand(createBudgetRequest(this.tableName, this.name, ceiling));
    await this.#conditional(this.client.send(command, { abortSignal: signal }));
  }

  async reclaim(
    expired: readonly (readonly [string, BudgetHolder])[],
    signal?: AbortSignal,
  ): Promise<number> {
    const { input, freed } = reclaimRequest(this.tableName, this.name, expired);
    return (await this.#update(input, signal)) ? freed : 0;
  }

  take(fence: string, holder: BudgetHolder, need: number, signal?: AbortSignal): Promise<boolean> {
    return this.#update(takeRequest(this.tableName, this.name, fence, holder, need), signal);
  }

  release(fence: string, granted: number, signal?: AbortSignal): Promise<boolean> {
    return this.#update(releaseRequest(this.tableName, this.name, fence, granted), signal);
  }

  stepRelease(fence: string, granted: number, step: BudgetStep, signal?: AbortSignal): Promise<boolean> {
    return this.#update(stepReleaseRequest(this.tableName, this.name, fence, granted, step), signal);
  }

  #update(input: UpdateItemCommandInput, signal: AbortSignal | undefined): Promise<boolean> {
    return this.#conditional(this.client.send(new UpdateItemCommand(input), { abortSignal: signal }));
  }

  /** `true` when the write applied, `false` when its condition failed; any other error rejects. */
  async #conditional(write: Promise<unknown>): Promise<boolean> {
    try {
      await this.#guard(write);
      return true;
    } catch (err) {
      if (isNamed(err, 'ConditionalCheckFailedException')) return false;
      throw err;
    }
  }

  async #guard<T>(request: Promise<T>): Promise<T> {
    try {
      return await request;
    } catch (err) {
      if (isNamed(err, 'ResourceNotFoundException'))
        throw new SemaphoreTableNotFoundError(this.tableName, { cause: err });
      throw err;
    }
  }
}
