import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { num, SemaphoreItems } from './semaphore-items.js';

/*
 * Item shape (one item per shard; the table has partition key `pk` and sort key `sk`, both strings):
 *
 *   pk        S  "sem#<name>"
 *   sk        S  "shard#<i>"            i in 0..shards-1
 *   capacity  N  permits of this shard  floor(limit / shards), the first (limit % shards) shards get one more
 *   used      N  permits held           always the sum of holders[*].n
 *   holders   M  { "<leaseId>": { n: N, until: N (epoch ms) } }
 *   limit     N  the total permits `capacity` was computed for: rewritten (with `capacity`) by an acquirer
 *                configured with another limit, checked by every take
 *   shards    N  how many shard items: fixed at creation; every process adopts the stored count
 *
 * Every mutation is one conditional UpdateItem on one shard item, so `used` and `holders` change together.
 */

/** One holder entry of a shard. */
export interface HolderEntry {
  n: number;
  until: number;
  /** Epoch ms at which the holder expects to give its permits back (adaptive holders that said so). */
  due?: number;
}

/** A shard item as read from the table. */
export interface ShardItem {
  index: number;
  capacity: number;
  used: number;
  limit: number;
  shards: number;
  holders: Map<string, HolderEntry>;
}

/** Holder entries whose lease ended before `now`: another acquirer may reclaim them. */
export function expiredHolders(item: Pick<ShardItem, 'holders'>, now: number): [string, HolderEntry][] {
  return [...item.holders].filter(([, entry]) => entry.until < now);
}

/**
 * The DynamoDB operations on a semaphore's shard items: item shape and condition expressions live here.
 * Every operation takes the caller's abort signal and hands it to the SDK, so a stalled DynamoDB never
 * holds the caller past it.
 */
export class ShardTable {
  private readonly items: SemaphoreItems;
  #shards: number;

  constructor(
    client: DynamoDBClient,
    readonly tableName: string,
    readonly name: string,
    readonly limit: number,
    shards: number,
  ) {
    this.items = new SemaphoreItems(client, tableName, name);
    this.#shards = shards;
  }

  /** Shard items: the configured count until a survey finds items stored with another (then that one). */
  get shards(): number {
    return this.#shards;
  }

  /** Uses the stored shard count: the items of a semaphore are never re-split, whatever the limit. */
  adoptShards(shards: number): void {
    this.#shards = shards;
  }

  capacityOf(index: number): number {
    return Math.floor(this.limit / this.shards) + (index < this.limit % this.shards ? 1 : 0);
  }

  /**
   * Takes `n` permits on shard `index` for lease `fence`: succeeds only when the shard has room
   * (`used <= capacity - n`, the subtraction done here because conditions allow no arithmetic) and the
   * stored shape is ours. Resolves `false` when the condition failed (full, missing, or another shape).
   */
  async take(index: number, fence: string, n: number, until: number, signal?: AbortSignal): Promise<boolean> {
    const update = 'SET #holders.#lease = :entry, #used = #used + :n';
    const condition =
      '#used <= :max AND #limit = :limit AND #shards = :shards AND attribute_not_exists(#holders.#lease)';
    return this.conditionalUpdate(
      index,
      update,
      condition,
      { '#lease': fence },
      {
        ':entry': { M: { n: num(n), until: num(until) } },
        ':n': num(n),
        ':max': num(this.capacityOf(index) - n),
        ':limit': num(this.limit),
        ':shards': num(this.shards),
      },
      signal,
    );
  }

  /**
   * Gives back lease `fence`'s `n` permits on shard `index`. Conditional on the holder entry still being
   * there with that count: a lease that was reclaimed (the fence) gives back nothing. Resolves `false` then.
   */
  async giveBack(index: number, fence: string, n: number, signal?: AbortSignal): Promise<boolean> {
    return this.conditionalUpdate(
      index,
      'REMOVE #holders.#lease SET #used = #used - :n',
      '#holders.#lease.n = :n',
      { '#lease': fence },
      { ':n': num(n) },
      signal,
    );
  }

  /** Moves lease `fence`'s expiry on shard `index`; `false` when its entry is gone (reclaimed). */
  async setUntil(index: number, fence: string, until: number, signal?: AbortSignal): Promise<boolean> {
    return this.items.setHolderUntil(`shard#${index}`, fence, until, signal);
  }

  /**
   * Removes expired holders from a shard and subtracts their permits, conditional on each entry being
   * unchanged since it was read (same `until`, so a holder that extended in between keeps its permits).
   * Resolves the permits freed (0 when someone else reclaimed or extended first).
   */
  async reclaim(
    item: ShardItem,
    expired: readonly [string, HolderEntry][],
    signal?: AbortSignal,
  ): Promise<number> {
    return this.items.removeExpired(`shard#${item.index}`, expired, '#used = #used - :freed', signal);
  }

  /**
   * Rewrites a shard item made for another limit to this one (`capacity` and `limit`), conditional on the
   * item still having the limit and shard count it was read with. Holders and `used` are untouched: under
   * a smaller capacity no take succeeds until `used` has come down below it. Resolves `false` when the item
   * changed in between (another process rewrote it first).
   */
  async resize(item: ShardItem, signal?: AbortSignal): Promise<boolean> {
    return this.conditionalUpdate(
      item.index,
      'SET #capacity = :capacity, #limit = :limit',
      '#limit = :stored AND #shards = :shards',
      {},
      {
        ':capacity': num(this.capacityOf(item.index)),
        ':limit': num(this.limit),
        ':stored': num(item.limit),
        ':shards': num(item.shards),
      },
      signal,
    );
  }

  /** Creates shard `index` empty unless it exists (two processes racing to create it is harmless). */
  create(index: number, signal?: AbortSignal): Promise<void> {
    return this.items.createIfAbsent(
      `shard#${index}`,
      {
        capacity: num(this.capacityOf(index)),
        used: num(0),
        holders: { M: {} },
        limit: num(this.limit),
        shards: num(this.shards),
      },
      signal,
    );
  }

  /** Reads every shard item of this semaphore with one strongly consistent Query. */
  async readAll(signal?: AbortSignal): Promise<ShardItem[]> {
    const raw = await this.items.readAll(signal);
    return raw.map(parseShardItem).filter((item): item is ShardItem => item !== undefined);
  }

  private conditionalUpdate(
    index: number,
    update: string,
    condition: string,
    extraNames: Record<string, string>,
    values: Record<string, AttributeValue>,
    signal: AbortSignal | undefined,
  ): Promise<boolean> {
    return this.items.update(`shard#${index}`, update, condition, extraNames, values, signal);
  }
}

/**
 * The `holders` map of a stored shard item (either kind). Every survey parses every entry (~80 on a hot
 * prefix's item), which makes this a hot path of a busy prefix: no `Object.entries` pairs and no spread for
 * the optional `due`, an object literal of either shape. 1.7x faster than the generic form
 * (`npm run bench:parse-holders`, docs/benchmarks.md).
 */
export function parseHolders(raw: Record<string, AttributeValue>): Map<string, HolderEntry> {
  const holders = new Map<string, HolderEntry>();
  const stored = raw.holders?.M;
  if (stored === undefined) return holders;
  for (const fence of Object.keys(stored)) {
    const value = stored[fence]!.M;
    const n = Number(value?.n?.N ?? 0);
    const until = Number(value?.until?.N ?? 0);
    const due = value?.due?.N;
    holders.set(fence, due === undefined ? { n, until } : { n, until, due: Number(due) });
  }
  return holders;
}

function parseShardItem(raw: Record<string, AttributeValue>): ShardItem | undefined {
  // Stryker disable next-line OptionalChaining,StringLiteral: `sk` is the table's sort key, so every item read has it.
  const match = /^shard#(\d+)$/.exec(raw.sk?.S ?? '');
  if (match === null) return undefined;
  const holders = parseHolders(raw);
  return {
    index: Number(match[1]),
    capacity: Number(raw.capacity?.N ?? 0),
    used: Number(raw.used?.N ?? 0),
    limit: Number(raw.limit?.N ?? 0),
    shards: Number(raw.shards?.N ?? 0),
    holders,
  };
}
