import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { AdaptiveState } from './adaptive-limit.js';
import { num, SemaphoreItems } from './semaphore-items.js';
import { type HolderEntry, parseHolders } from './shard-table.js';

/*
 * Item shape of an adaptive semaphore (one item per shard, next to the static semaphore's items under the
 * same partition key, with their own sort keys so neither kind reads the other's):
 *
 *   pk           S  "sem#<name>"
 *   sk           S  "adaptive#<i>"         i in 0..shards-1
 *   capacity     N  permits this shard grants now (fractional; moved by releases, see adaptive-limit.ts)
 *   free         N  capacity minus the permits held; negative after a shrink while holders exceed it
 *   holders      M  { "<leaseId>": { n: N, until: N (epoch ms), due?: N (epoch ms the holder expects to give back) } }
 *   latencyMs    N  moving average of permit-ms per S3 attempt, reported by releases
 *   decreasedAt  N  epoch ms of the last multiplicative decrease
 *   shards       N  the shard count, fixed at creation
 *
 * A take needs `free >= n` and nothing else: it does not need to know the capacity, which other holders
 * move all the time. A resize moves `capacity` and `free` by the same delta in one write, so `free` stays
 * `capacity - held` and a shrink grants nothing until enough holders have given back.
 */

/** An adaptive shard item as read from the table. */
export interface AdaptiveShardItem extends AdaptiveState {
  readonly index: number;
  readonly free: number;
  readonly shards: number;
  readonly holders: Map<string, HolderEntry>;
}

/**
 * A release's change to the shard's adaptive state, computed from the capacity its holder read before the
 * take (`from`). Applied only while the capacity is still `from`: a step computed from a state another
 * release has moved since would compound (twenty holders releasing together each applied the whole shrink
 * of a falling ceiling, and drove the capacity to -100 with no holder left to lift it). A stale step is
 * dropped and the permits go back plainly; the next release steps from the state it read.
 */
export interface CapacityChange {
  /** The shard's capacity when the holder read it: the step applies only if it still is. */
  readonly from: number;
  /** Added to both `capacity` and `free` (negative shrinks). */
  readonly delta: number;
  readonly latencyMs: number;
  /** Set on a decrease: stamped as `decreasedAt`, and the write is conditional on no decrease since `takenAt`. */
  readonly decrease?: { readonly at: number; readonly takenAt: number };
}

const SK_PREFIX = 'adaptive#';

/**
 * The DynamoDB operations on an adaptive semaphore's shard items. Every operation is one request carrying
 * the caller's abort signal; mutations are conditional `UpdateItem`s on one item.
 */
export class AdaptiveShardTable {
  private readonly items: SemaphoreItems;

  constructor(
    client: DynamoDBClient,
    readonly tableName: string,
    readonly name: string,
  ) {
    this.items = new SemaphoreItems(client, tableName, name);
  }

  /** Creates shard `index` with `state` (all permits free) unless it exists; a lost race is harmless. */
  create(index: number, shards: number, state: AdaptiveState, signal?: AbortSignal): Promise<void> {
    return this.items.createIfAbsent(
      `${SK_PREFIX}${index}`,
      {
        capacity: num(state.capacity),
        free: num(state.capacity),
        holders: { M: {} },
        latencyMs: num(state.latencyMs),
        decreasedAt: num(state.decreasedAt),
        shards: num(shards),
      },
      signal,
    );
  }

  /** Every adaptive shard item of this semaphore, one strongly consistent Query. */
  async readAll(signal?: AbortSignal): Promise<AdaptiveShardItem[]> {
    const raw = await this.items.readAll(signal);
    return raw.map(parseAdaptiveItem).filter((item): item is AdaptiveShardItem => item !== undefined);
  }

  /**
   * Takes `n` permits of shard `index` for lease `fence` when `free >= n`; `false` when not. `due`: when the
   * holder expects to give them back (waiters read it to sleep until then).
   */
  take(
    index: number,
    shards: number,
    fence: string,
    grant: { n: number; until: number; due?: number | undefined },
    signal?: AbortSignal,
  ) {
    const { n, until, due } = grant;
    const entry = { n: num(n), until: num(until), ...(due === undefined ? {} : { due: num(due) }) };
    return this.update(
      index,
      'SET #holders.#lease = :entry, #free = #free - :n',
      '#free >= :n AND #shards = :shards AND attribute_not_exists(#holders.#lease)',
      { '#lease': fence },
      { ':entry': { M: entry }, ':n': num(n), ':shards': num(shards) },
      signal,
    );
  }

  /**
   * Gives back lease `fence`'s `n` permits of shard `index` and applies `change` in the same write (the
   * adaptive state rides on the release the holder makes anyway). Conditional on the entry still being
   * ours (the fence), and for a decrease on no decrease since the lease was taken. `false` when a
   * condition failed: the caller gives back without the change when the entry may still be there.
   */
  giveBack(index: number, fence: string, n: number, change?: CapacityChange, signal?: AbortSignal) {
    if (change === undefined) {
      return this.update(
        index,
        'REMOVE #holders.#lease SET #free = #free + :n',
        '#holders.#lease.n = :n',
        { '#lease': fence },
        { ':n': num(n) },
        signal,
      );
    }
    const values: Record<string, AttributeValue> = {
      ':n': num(n),
      ':freed': num(n + change.delta),
      ':delta': num(change.delta),
      ':latency': num(change.latencyMs),
      ':from': num(change.from),
    };
    let update =
      'REMOVE #holders.#lease SET #free = #free + :freed, #capacity = #capacity + :delta, #latency = :latency';
    let condition = '#holders.#lease.n = :n AND #capacity = :from';
    if (change.decrease !== undefined) {
      update += ', #decreasedAt = :at';
      condition += ' AND #decreasedAt < :takenAt';
      values[':at'] = num(change.decrease.at);
      values[':takenAt'] = num(change.decrease.takenAt);
    }
    return this.update(index, update, condition, { '#lease': fence }, values, signal);
  }

  /**
   * A resize of lease `fence` on shard `index` (`Lease.resize`): the capacity moves by `delta` to the
   * rescaled state, and the lease's entry from `n` to `to` permits (its share of the rescaled capacity, so
   * `to - n <= delta` and `free` never drops). Conditional on the entry still holding `n`, the capacity
   * still being `from` (a state another holder moved since is not stepped from twice), and the lease being
   * the shard's only holder (`free = from - n`): another holder paces at the latency it was granted with,
   * so rescaling its permits to the new latency would free rate it still uses (a holder at 2 of 4 permits
   * and 75 ms beside a x4 resize and a new take: 70 writes/s against a 50/s limit until it released).
   * That also rules out a capacity back at `from` after a grow and a shrink while holders hold more (`free`
   * negative). `false` when not. `due`: when the holder now expects to give the permits back.
   */
  resize(
    index: number,
    fence: string,
    step: { from: number; delta: number; latencyMs: number; n: number; to: number; due?: number | undefined },
    signal?: AbortSignal,
  ): Promise<boolean> {
    const values: Record<string, AttributeValue> = {
      ':delta': num(step.delta),
      ':freed': num(step.delta - (step.to - step.n)),
      ':latency': num(step.latencyMs),
      ':to': num(step.to),
      ':n': num(step.n),
      ':from': num(step.from),
    };
    let update =
      'SET #capacity = #capacity + :delta, #free = #free + :freed, #latency = :latency, #holders.#lease.n = :to';
    if (step.due !== undefined) {
      update += ', #holders.#lease.due = :due';
      values[':due'] = num(step.due);
    }
    values[':alone'] = num(step.from - step.n);
    const condition = '#holders.#lease.n = :n AND #capacity = :from AND #free = :alone';
    return this.update(index, update, condition, { '#lease': fence }, values, signal);
  }

  /** Moves lease `fence`'s expiry on shard `index`; `false` when its entry is gone (reclaimed). */
  setUntil(index: number, fence: string, until: number, signal?: AbortSignal) {
    return this.items.setHolderUntil(`${SK_PREFIX}${index}`, fence, until, signal);
  }

  /**
   * Removes expired holders (at most 25 per write) and frees their permits, conditional on each entry
   * being unchanged since read (a holder that extended in between keeps its permits). Resolves the permits
   * freed, 0 when someone else reclaimed or extended first.
   */
  reclaim(index: number, expired: readonly [string, HolderEntry][], signal?: AbortSignal) {
    return this.items.removeExpired(`${SK_PREFIX}${index}`, expired, '#free = #free + :freed', signal);
  }

  private update(
    index: number,
    update: string,
    condition: string,
    extraNames: Record<string, string>,
    values: Record<string, AttributeValue>,
    signal: AbortSignal | undefined,
  ): Promise<boolean> {
    return this.items.update(`${SK_PREFIX}${index}`, update, condition, extraNames, values, signal);
  }
}

function parseAdaptiveItem(raw: Record<string, AttributeValue>): AdaptiveShardItem | undefined {
  // Stryker disable next-line OptionalChaining,StringLiteral: `sk` is the table's sort key, so every item read has it.
  const match = /^adaptive#(\d+)$/.exec(raw.sk?.S ?? '');
  if (match === null) return undefined;
  const holders = parseHolders(raw);
  return {
    index: Number(match[1]),
    capacity: Number(raw.capacity?.N ?? 0),
    free: Number(raw.free?.N ?? 0),
    latencyMs: Number(raw.latencyMs?.N ?? 0),
    decreasedAt: Number(raw.decreasedAt?.N ?? 0),
    shards: Number(raw.shards?.N ?? 0),
    holders,
  };
}
