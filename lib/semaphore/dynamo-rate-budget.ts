import {
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { bookSlots } from './book-slots.js';
import {
  createBudgetRequest,
  parseBudgetItem,
  readBudgetRequest,
  writeScheduleRequest,
} from './budget-item.js';
import type { BudgetContext, BudgetStore } from './budget-store.js';
import { createBudgetTable } from './budget-table.js';
import { SemaphoreTableNotFoundError } from './errors.js';
import { checkBudgetOptions, startRateOf } from './rate-budget-checks.js';
import { floorToRateGrid, type Schedule, type ScheduleChange } from './rate-schedule.js';
import type { BookOptions, RateBooking, RateBudget } from './rate-types.js';

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
   * The semaphore table: string partition key `pk`, string sort key `sk` (`DynamoRateBudget.createTable`).
   * The budget is one item, `pk = rate#<name>`, `sk = schedule`.
   * @example 'semaphores'
   */
  tableName: string;
  /**
   * What the budget is for: every process naming the same budget shares it.
   * @example 'prefix:bucket/t=acme/'
   */
  name: string;
  /**
   * The most writes per second the budget may reach, and where a new budget starts unless `startRate` says
   * otherwise (`S3_PREFIX_WRITE_RATE`); kept to a millionth. A process configured lower than a stored rate books at its own ceiling, and its
   * reports bring the budget down to it.
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
   * Clock in epoch ms: slots and the last decrease are stored as such.
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
   * Bound in ms on a report called without a signal.
   * @default 2000
   * @example 500
   */
  reportTimeoutMs?: number;
}

/**
 * A prefix's fleet-wide write budget as one DynamoDB item of constant size (docs/fleet-cap.md): a booking
 * costs one strongly consistent read and one conditional write; a report costs nothing unless it moves the
 * budget (then a read and a conditional write).
 */
export class DynamoRateBudget implements RateBudget {
  readonly name: string;
  readonly ceiling: number;
  readonly tableName: string;
  readonly #context: BudgetContext;

  /**
   * Creates the budgets' table (string `pk` and `sk`, on-demand) unless it exists, and waits until it is
   * active. For local use and tests; in the cloud the CDK stack creates it. `options.signal` bounds the
   * requests and the wait (@default unbounded).
   * @example await DynamoRateBudget.createTable(client, 'budgets', { signal: AbortSignal.timeout(30_000) })
   */
  static createTable(
    client: DynamoDBClient,
    tableName: string,
    options: { readonly signal?: AbortSignal } = {},
  ): Promise<void> {
    return createBudgetTable(client, tableName, options.signal);
  }

  constructor(options: DynamoRateBudgetOptions) {
    checkBudgetOptions(options);
    this.name = options.name;
    this.ceiling = floorToRateGrid(options.ceiling);
    this.tableName = options.tableName;
    this.#context = {
      name: this.name,
      ceiling: this.ceiling,
      startRate: startRateOf(options.startRate, this.ceiling),
      store: new DynamoBudgetStore(options.client, options.tableName, options.name),
      now: options.now ?? (() => Date.now()),
      random: options.random ?? Math.random,
      reportTimeoutMs: options.reportTimeoutMs ?? 2_000,
    };
  }

  book(options: BookOptions): Promise<RateBooking> {
    return bookSlots(this.#context, options);
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

  async read(signal?: AbortSignal): Promise<Schedule | undefined> {
    const command = new GetItemCommand(readBudgetRequest(this.tableName, this.name));
    const answer = await this.#guard(this.client.send(command, { abortSignal: signal }));
    return parseBudgetItem(answer.Item);
  }

  async create(rate: number, signal?: AbortSignal): Promise<void> {
    const command = new PutItemCommand(createBudgetRequest(this.tableName, this.name, rate));
    await this.#conditional(this.client.send(command, { abortSignal: signal }));
  }

  write(read: Schedule, change: ScheduleChange, by: string, signal?: AbortSignal): Promise<boolean> {
    const input = writeScheduleRequest(this.tableName, this.name, read, change, by);
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
