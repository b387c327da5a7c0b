import { CreateTableCommand, DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { withAbortReason } from './abort-reason.js';
import { acquireInRounds } from './acquire-rounds.js';
import { acquireBackoffCap, sleep } from './backoff.js';
import { InvalidSemaphoreOptionsError, LeaseLostError, SemaphoreConfigMismatchError } from './errors.js';
import { newLeaseId } from './lease-id.js';
import { expiredHolders, ShardTable } from './shard-table.js';
import type { AcquireOptions, Lease, LeaseCallOptions, Semaphore } from './types.js';
import {
  checkLeaseMs,
  checkPermitRequest,
  checkSemaphoreOptions,
  resolveDynamoTuning,
} from './validation.js';

export interface DynamoSemaphoreOptions {
  /** The DynamoDB client (create one per container and share it). */
  client: DynamoDBClient;
  /** Table with string partition key `pk` and string sort key `sk` (see `DynamoSemaphore.createTable`). */
  tableName: string;
  /** Semaphore name, e.g. `prefix:t=acme`. Items are keyed `pk = sem#<name>`. */
  name: string;
  /**
   * Total permits across every process. May change between deployments: the first acquire that finds the
   * items stored for another limit rewrites their capacity (README, "Changing the limit").
   */
  limit: number;
  /**
   * Lease length in ms, relative to each acquire, when `acquire` gets no `leaseMs`. Default 60,000.
   * In Lambda pass the invocation's remaining time plus a margin to `acquire` instead.
   */
  leaseMs?: number;
  /**
   * Shard items the permits are split over, for a semaphore whose items do not exist yet (an existing one
   * keeps its stored count). Default `ceil(limit / 64)` (limit 70 -> 2 shards of 35).
   * One shard item takes 1,000 writes/s on DynamoDB, about 500 acquire+release cycles/s at 2 writes each;
   * at one cycle per invocation per prefix that is far above what a prefix's S3 limit lets invocations do
   * (3,500 writes/s / 100 per batch = 35 invocations/s). More shards raise that ceiling but fragment
   * grants: a grant larger than what one shard has free spans shards and costs a write per shard.
   */
  shards?: number;
  /** First backoff ceiling between attempts when permits are short, in ms. Default 20. */
  backoffBaseMs?: number;
  /** Largest backoff between attempts, in ms. Default 500. */
  backoffCapMs?: number;
  /**
   * Bound in ms on giving permits back when the caller's signal cannot be used: the give-back of a failed
   * or aborted acquire (its signal may be the very reason) and `release()`/`extend()` called without a
   * signal. A stalled DynamoDB then costs at most this; the permits it could not give back expire with
   * their lease. Default 2,000.
   */
  giveBackTimeoutMs?: number;
  /** Clock in epoch ms (leases store absolute expiry times). Default `Date.now`. */
  now?: () => number;
  /** Uniform [0, 1) source for the starting shard and backoff jitter. Default `Math.random`. */
  random?: () => number;
}

interface Grant {
  shard: number;
  n: number;
}

/** Permits of one shard that can be taken now, after reclaiming expired holders. */
interface ShardRoom {
  index: number;
  free: number;
}

/**
 * A counting semaphore shared by every process through one DynamoDB table; see README.md for the item
 * shape, the condition expressions and the cost per acquire.
 */
export class DynamoSemaphore implements Semaphore {
  readonly name: string;
  readonly limit: number;
  readonly leaseMs: number;
  readonly tableName: string;
  private readonly table: ShardTable;
  private readonly backoffBaseMs: number;
  private readonly backoffCapMs: number;
  /** @internal */
  readonly giveBackTimeoutMs: number;
  private readonly now: () => number;
  private readonly random: () => number;
  /** Set when shards were recently short of room: acquires then read before writing instead of writing blind. */
  private contended = false;

  constructor(options: DynamoSemaphoreOptions) {
    this.name = options.name;
    this.limit = options.limit;
    this.leaseMs = options.leaseMs ?? 60_000;
    this.tableName = options.tableName;
    checkSemaphoreOptions(this);
    const tuning = resolveDynamoTuning(
      this.name,
      this.limit,
      options.shards ?? Math.ceil(this.limit / 64),
      options,
    );
    const shards = tuning.shards;
    this.backoffBaseMs = tuning.backoffBaseMs;
    this.backoffCapMs = tuning.backoffCapMs;
    this.giveBackTimeoutMs = tuning.giveBackTimeoutMs;
    this.now = options.now ?? (() => Date.now());
    this.random = options.random ?? Math.random;
    this.table = new ShardTable(options.client, this.tableName, this.name, this.limit, shards);
  }

  /**
   * Shard items: `options.shards` (default `ceil(limit / 64)`) for a new semaphore; once a survey has read
   * stored items, their count (items are never re-split, so a limit change does not move permits).
   */
  get shards(): number {
    return this.table.shards;
  }

  /**
   * Creates the semaphore table (pk/sk strings, on-demand) unless it exists, and waits until it is active.
   * For local use and tests; in the cloud CDK creates it.
   */
  static async createTable(client: DynamoDBClient, tableName: string): Promise<void> {
    try {
      await client.send(
        new CreateTableCommand({
          TableName: tableName,
          AttributeDefinitions: [
            { AttributeName: 'pk', AttributeType: 'S' },
            { AttributeName: 'sk', AttributeType: 'S' },
          ],
          KeySchema: [
            { AttributeName: 'pk', KeyType: 'HASH' },
            { AttributeName: 'sk', KeyType: 'RANGE' },
          ],
          BillingMode: 'PAY_PER_REQUEST',
        }),
      );
    } catch (err) {
      if ((err as { name?: unknown }).name !== 'ResourceInUseException') throw err;
    }
    for (;;) {
      const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
      // Stryker disable next-line OptionalChaining,ArrayDeclaration: DescribeTable of an existing table always answers its Table and KeySchema.
      const keys = (Table?.KeySchema ?? []).map((k) => `${k.AttributeName}:${k.KeyType}`).join(',');
      if (keys !== 'pk:HASH,sk:RANGE') {
        throw new InvalidSemaphoreOptionsError(
          `table "${tableName}" exists with key schema ${keys}; a semaphore table needs pk (HASH) and sk (RANGE)`,
        );
      }
      // Stryker disable next-line OptionalChaining: DescribeTable of an existing table always answers its Table.
      if (Table?.TableStatus === 'ACTIVE') return;
      await sleep(250);
    }
  }

  async acquire(k: number, options: AcquireOptions = {}): Promise<Lease> {
    const min = checkPermitRequest(this.name, this.limit, k, options);
    const leaseMs = options.leaseMs ?? this.leaseMs;
    const { deadline, signal } = options;
    // One id per acquire call: it keys the holder entry in every shard the lease spans and fences it.
    const fence = newLeaseId();
    let until = 0;
    const grants = await acquireInRounds({
      name: this.name,
      min,
      deadline,
      signal,
      now: this.now,
      random: this.random,
      backoffBaseMs: this.backoffBaseMs,
      backoffCapMs: acquireBackoffCap(this.backoffCapMs, options.backoffCapMs),
      round: (attempt) => {
        until = this.now() + leaseMs;
        return this.takeUpTo(fence, k, min, until, attempt === 0, signal);
      },
      giveBack: (short) => this.giveBack(fence, short),
    });
    return new DynamoLease(this, this.table, fence, grants, until, this.now);
  }

  /**
   * @internal Gives back every grant; a grant whose entry is gone (reclaimed) gives back nothing. Bounded
   * by `signal`, else by `giveBackTimeoutMs` (never by an acquire's signal, which may have aborted already).
   */
  async giveBack(fence: string, grants: readonly Grant[], signal?: AbortSignal): Promise<void> {
    if (grants.length === 0) return;
    const bound = signal ?? AbortSignal.timeout(this.giveBackTimeoutMs);
    await withAbortReason(
      bound,
      Promise.all(grants.map((g) => this.table.giveBack(g.shard, fence, g.n, bound))),
    );
  }

  /**
   * One round: takes up to `k` permits, never more than are free. When shards have been roomy it writes
   * blindly to a random shard first (one write, the common case). Otherwise, or when that fails, it reads
   * all shards (reclaiming expired holders), writes nothing when fewer than `min` are free, and otherwise
   * writes to the shard that fits the rest whole, else to the roomiest shards in turn.
   */
  private async takeUpTo(
    fence: string,
    k: number,
    min: number,
    until: number,
    blindFirst: boolean,
    signal: AbortSignal | undefined,
  ): Promise<Grant[]> {
    const grants: Grant[] = [];
    // Writes whose outcome is unknown after an error are given back too: the conditional give-back is a
    // no-op for a take that never landed, so nothing stays held when this round throws.
    const attempted: Grant[] = [];
    const tryTake = async (shard: number, n: number) => {
      attempted.push({ shard, n });
      if (await this.table.take(shard, fence, n, until, signal)) grants.push({ shard, n });
      else this.contended = true;
    };
    const start = Math.floor(this.random() * this.shards);
    const remaining = () => k - grants.reduce((sum, g) => sum + g.n, 0);
    try {
      if (blindFirst && !this.contended && this.table.capacityOf(start) > 0) {
        await tryTake(start, Math.min(k, this.table.capacityOf(start)));
        if (remaining() === 0) return grants;
      }
      const rooms = await this.survey(signal);
      // A blind write would have failed on any shard short of a k-sized grant: read first next time.
      this.contended = rooms.some((r) => r.free < Math.min(k, this.table.capacityOf(r.index)));
      const rotated = rooms.map((_, j) => rooms[(start + j) % this.shards]!);
      if (rotated.reduce((sum, r) => sum + r.free, 0) + (k - remaining()) < min) return grants;
      const whole = rotated.find((r) => r.free >= remaining() && !grants.some((g) => g.shard === r.index));
      const order = whole !== undefined ? [whole] : [...rotated].sort((a, b) => b.free - a.free);
      for (const room of order) {
        if (remaining() === 0) break;
        if (room.free <= 0 || grants.some((g) => g.shard === room.index)) continue;
        await tryTake(room.index, Math.min(remaining(), room.free));
      }
      return grants;
    } catch (err) {
      await this.giveBack(fence, attempted).catch(() => undefined);
      throw err;
    }
  }

  /**
   * Reads all shards; adopts their stored count; rewrites shards made for another limit to ours (a limit
   * change takes effect here, online); creates missing ones; reclaims expired holders.
   */
  private async survey(signal: AbortSignal | undefined): Promise<ShardRoom[]> {
    const items = await this.table.readAll(signal);
    const stored = items[0]?.shards;
    if (stored !== undefined) {
      // Every item of a semaphore is created with the same count; items that disagree are not ours to fix.
      const odd = items.find((item) => item.shards !== stored || item.index >= stored);
      if (odd !== undefined) {
        throw new SemaphoreConfigMismatchError(
          this.name,
          { limit: odd.limit, shards: odd.shards },
          { limit: this.limit, shards: stored },
        );
      }
      if (stored !== this.table.shards) this.table.adoptShards(stored);
    }
    const byIndex = new Map(items.map((item) => [item.index, item]));
    const now = this.now();
    return Promise.all(
      Array.from({ length: this.table.shards }, async (_, index): Promise<ShardRoom> => {
        let item = byIndex.get(index);
        if (item === undefined) {
          await this.table.create(index, signal);
          return { index, free: this.table.capacityOf(index) };
        }
        if (item.limit !== this.limit) {
          // Another process rewrote it first: no room this round; the next survey reads what it wrote.
          if (!(await this.table.resize(item, signal))) return { index, free: 0 };
          item = { ...item, limit: this.limit, capacity: this.table.capacityOf(index) };
        }
        const expired = expiredHolders(item, now);
        const freed = expired.length > 0 ? await this.table.reclaim(item, expired, signal) : 0;
        // Below zero after a shrink: old holders still hold more than the new capacity.
        return { index, free: Math.max(0, item.capacity - item.used + freed) };
      }),
    );
  }
}

class DynamoLease implements Lease {
  private until: number;
  private releasing: Promise<void> | undefined;

  constructor(
    private readonly semaphore: DynamoSemaphore,
    private readonly table: ShardTable,
    readonly fence: string,
    private readonly grants: readonly Grant[],
    until: number,
    private readonly now: () => number,
  ) {
    this.until = until;
  }

  get permits(): number {
    return this.grants.reduce((sum, g) => sum + g.n, 0);
  }

  get expiresAt(): number {
    return this.until;
  }

  release(options: LeaseCallOptions = {}): Promise<void> {
    this.releasing ??= this.semaphore
      .giveBack(this.fence, this.grants, options.signal)
      .catch((err: unknown) => {
        // A failed give-back (network) may be retried; the lease expires in any case.
        this.releasing = undefined;
        throw err;
      });
    return this.releasing;
  }

  async extend(ms: number, options: LeaseCallOptions = {}): Promise<void> {
    checkLeaseMs(this.semaphore.name, ms);
    if (this.releasing !== undefined) throw new LeaseLostError(this.semaphore.name, this.fence);
    const until = this.now() + ms;
    const bound = options.signal ?? AbortSignal.timeout(this.semaphore.giveBackTimeoutMs);
    const kept = await withAbortReason(
      bound,
      Promise.all(this.grants.map((g) => this.table.setUntil(g.shard, this.fence, until, bound))),
    );
    if (kept.includes(false)) throw new LeaseLostError(this.semaphore.name, this.fence);
    this.until = until;
  }
}
