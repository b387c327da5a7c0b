// DynamoDB, modelled in-process behind the client port the handler's prefix budgets talk through
// (`client.send(command, { abortSignal })`), so the budgets' own condition and update expressions decide
// every booking.
//
// Expressions are parsed and evaluated by dynalite's engine (its PEG parsers, `checkConditional`,
// `mapPath`, `itemSize`), called synchronously on a plain Map instead of through its LevelDB store and
// HTTP server; the update application below is a port of dynalite 4.0.0's `applyUpdateExpression`
// (actions/updateItem.js, MIT). So any expression dynalite accepts works here unchanged, including ones a
// later budget design sends (nothing here knows the budget's item shape).
//
// What it encodes (AWS figures, from the DynamoDB Developer Guide, retrieved 2026-11):
// - Write units: one WRU per 1 KB of item size, rounded up, the larger of the item before and after the
//   write; a write whose condition fails still consumes units for the item's size ("Read/write capacity
//   mode", "Conditional writes"). Reads: one RRU per 4 KB of the item size of a strongly consistent
//   GetItem, or of the summed item sizes of a strongly consistent Query, rounded up.
// - Per-partition throughput: 1,000 write units/s and 3,000 read units/s ("Partitions and data
//   distribution": "a single partition can support a maximum of 3,000 RCUs or 1,000 WCUs"). A partition
//   key value's items start in one partition (a prefix's budget is one item, `pk = rate#<name>`).
//   Exceeding it answers `ProvisionedThroughputExceededException` (HTTP 400), which the SDK retries.
// - Split for heat ("Best practices for designing and using partition keys effectively" > "Isolate
//   frequently accessed items", docs.aws.amazon.com/amazondynamodb/latest/developerguide/
//   bp-partition-key-design.html#bp-partition-key-partitions-adaptive-split, and burst-adaptive-capacity.html
//   #isolate-frequent-access-items): "If your application drives disproportionately high traffic to one or
//   more items, adaptive capacity rebalances your partitions such that frequently accessed items don't
//   reside on the same partition"; an item collection can be broken "into segments by sort key, as long as
//   the item collection isn't traffic that is tracked by a monotonic increase or decrease of the sort key";
//   not across partitions when the table has a local secondary index; and a single item still gets at most
//   "the partition maximum of 3,000 RCUs and 1,000 WCUs". The project's table qualifies (on-demand, no
//   LSI), though a budget's single item gains nothing from a split. Modelled conservatively: a partition
//   whose requests were throttled in every second (no full second without a throttle) for
//   `splitForHeatAfterSeconds` splits in two at its middle sort key, each half with its own 1,000 WCU /
//   3,000 RCU and a heat count from zero; a half holding one item splits no further. AWS gives no figure
//   for how long the heat must last ("consistently high traffic", "sustained"): the default of 300 s is
//   an ASSUMPTION of this model, not an AWS figure.
// - Latency: single-digit milliseconds, modelled lognormal (median 4 ms, p99 12 ms by default).
// - The client: SDK v3's standard retry mode (3 attempts; full-jitter backoff with base 100 ms, 500 ms for
//   throttling, cap 20 s), every wait abortable by the call's `abortSignal`.
import { createRequire } from 'node:module';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { systemClock } from '../../lib/local/s3-behaviour/clock.js';

type Item = Record<string, AttributeValue>;

interface DynaliteRequest {
  TableName?: string;
  Key?: Item;
  Item?: Item;
  UpdateExpression?: string;
  ConditionExpression?: string;
  KeyConditionExpression?: string;
  FilterExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Item;
  ConsistentRead?: boolean;
  ExclusiveStartKey?: Item;
  Limit?: number;
  ReturnValues?: string;
  _updates?: { sections: UpdateSection[] };
  _condition?: { expression: unknown };
  _keyCondition?: { expression: unknown };
  _filter?: { expression: unknown };
}

interface UpdateSection {
  type: 'set' | 'remove' | 'add' | 'delete';
  path: Array<string | number>;
  val: unknown;
  attrType?: string;
}

interface DynaliteDb {
  checkConditional(data: DynaliteRequest, existing: Item | undefined): unknown;
  matchesExprFilter(item: Item, expression: unknown): boolean;
  mapPath(path: unknown[], item: Item): AttributeValue | undefined;
  itemSize(item: Item): number;
}

const require = createRequire(import.meta.url);
const dynaliteDb = require('dynalite/db/index.js') as DynaliteDb;
const dynaliteValidations = require('dynalite/validations/index.js') as {
  validateExpressions(data: DynaliteRequest): string | undefined;
};

/** The SDK's shape of a service error: `name`, `$fault`, `$metadata.httpStatusCode`. */
export function dynamoError(name: string, message: string, status = 400): Error {
  return Object.assign(new Error(message), {
    name,
    $fault: status >= 500 ? 'server' : 'client',
    $metadata: { httpStatusCode: status },
  });
}

/** Waits `ms` of (simulated) time on the global timers; rejects when `signal` aborts first. */
export const wait = (ms: number, signal?: AbortSignal): Promise<void> => systemClock.sleep(ms, signal);

/** Lognormal sampler from a median and a 99th percentile. */
export function lognormal(medianMs: number, p99Ms: number, random: () => number): () => number {
  const mu = Math.log(medianMs);
  const sigma = (Math.log(p99Ms) - mu) / 2.3263478740408408;
  return () => {
    const u1 = 1 - random();
    const u2 = random();
    return Math.exp(mu + sigma * Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2));
  };
}

export interface DynamoModelOptions {
  /** Write units per second one partition key accepts. @default 1000 */
  readonly writeUnitsPerSecond?: number;
  /** Read units per second one partition key accepts. @default 3000 */
  readonly readUnitsPerSecond?: number;
  /** Seconds of unused throughput a partition may bank (small: the per-partition limit is a hard one). @default 0.1 */
  readonly burstSeconds?: number;
  /**
   * Seconds a partition must be throttled without pause before it splits for heat (in two, at its middle
   * sort key). AWS gives no figure; the default is this model's assumption. `Infinity`: never split.
   * @default 300
   */
  readonly splitForHeatAfterSeconds?: number;
  /** Request latency. @default { medianMs: 4, p99Ms: 12 } */
  readonly latency?: { medianMs: number; p99Ms: number };
  /** Uniform [0, 1) source. */
  readonly random: () => number;
  /** Simulated epoch ms. */
  readonly now: () => number;
}

interface PartitionState {
  /** The lowest sort key this partition holds ('' for a key's first partition: every sort key). */
  readonly from: string;
  writeTokens: number;
  readTokens: number;
  updatedAt: number;
  /** Write units consumed in `second`, and the most in any second so far. */
  second: number;
  unitsThisSecond: number;
  peakUnitsPerSecond: number;
  writeUnits: number;
  throttled: number;
  largestItemBytes: number;
  /** Start (epoch ms) of the run of seconds with a throttled request, and that run's last such second. */
  heatSince: number | undefined;
  lastThrottledSecond: number;
  /** Read units spent in `readSecond`, the most in any second so far, and in all. */
  readSecond: number;
  readUnitsThisSecond: number;
  peakReadUnitsPerSecond: number;
  readUnits: number;
}

/** A split for heat: which partition key, when (simulated epoch ms), and the sort key the new half starts at. */
export interface HeatSplit {
  key: string;
  atMs: number;
  from: string;
}

/** What a cell reports about DynamoDB. */
export interface DynamoStats {
  requests: number;
  writeRequests: number;
  readRequests: number;
  writeUnits: number;
  readUnits: number;
  conditionalFailures: number;
  throttled: number;
  hottestPartition: { key: string; peakWriteUnitsPerSecond: number; largestItemBytes: number } | undefined;
  /** The partition that spent the most read units (a partition serves at most 3,000 RCU/s). */
  hottestReadPartition: { key: string; readUnits: number; peakReadUnitsPerSecond: number } | undefined;
  largestItemBytes: number;
  /** The splits for heat, in order (none when no partition stayed throttled long enough). */
  splits: HeatSplit[];
}

/** The table side: items, partition throughput, consumed units. Synchronous; latency is the client's. */
export class DynamoTableModel {
  readonly #items = new Map<string, Map<string, Item>>();
  /**
   * Stored items are never changed in place (a write stores a new object): their size is computed once.
   * They are frozen all the way down, so a read hands them out without a copy (a caller that changed one
   * would throw, not corrupt the table); a write copies the item it changes.
   */
  readonly #sizes = new WeakMap<Item, number>();
  /** Per partition key, its partitions in sort-key order (one until a split for heat). */
  readonly #partitions = new Map<string, PartitionState[]>();
  readonly #splits: HeatSplit[] = [];
  readonly #wcu: number;
  readonly #rcu: number;
  readonly #burst: number;
  readonly #splitAfterMs: number;
  readonly #now: () => number;
  readonly #expressions = new ExpressionCache();
  readonly stats = {
    requests: 0,
    writeRequests: 0,
    readRequests: 0,
    writeUnits: 0,
    readUnits: 0,
    conditionalFailures: 0,
    throttled: 0,
  };

  constructor(
    options: Pick<
      DynamoModelOptions,
      'writeUnitsPerSecond' | 'readUnitsPerSecond' | 'burstSeconds' | 'splitForHeatAfterSeconds' | 'now'
    >,
  ) {
    this.#wcu = options.writeUnitsPerSecond ?? 1000;
    this.#rcu = options.readUnitsPerSecond ?? 3000;
    this.#burst = options.burstSeconds ?? 0.1;
    this.#splitAfterMs = (options.splitForHeatAfterSeconds ?? 300) * 1000;
    this.#now = options.now;
  }

  /** Runs one request by operation name (`PutItem`, `UpdateItem`, `GetItem`, `DeleteItem`, `Query`). */
  execute(operation: string, input: DynaliteRequest): Record<string, unknown> {
    this.stats.requests += 1;
    const data: DynaliteRequest = cloneAttributes(input);
    const invalid = this.#expressions.parse(data);
    if (invalid !== undefined) throw dynamoError('ValidationException', invalid);
    switch (operation) {
      case 'PutItem':
        // `data` is this request's own copy: its Item can be stored as is.
        return this.#write(data, data.Item!, () => data.Item!);
      case 'UpdateItem':
        return this.#write(data, data.Key!, (old) => applyUpdate(data, old));
      case 'DeleteItem':
        return this.#write(data, data.Key!, () => undefined);
      case 'GetItem':
        return this.#get(data);
      case 'Query':
        return this.#query(data);
      default:
        throw dynamoError('UnknownOperationException', `not modelled: ${operation}`);
    }
  }

  /** The items of one partition key (a copy), for a cell's timeline. */
  itemsOf(pk: string): Item[] {
    return [...(this.#items.get(pk)?.values() ?? [])].map((item) => cloneAttributes(item));
  }

  /** Per-partition figures, for the cell's report. */
  report(): DynamoStats {
    let hottest: DynamoStats['hottestPartition'];
    let hottestRead: DynamoStats['hottestReadPartition'];
    let largest = 0;
    for (const [pk, partitions] of this.#partitions) {
      for (const p of partitions) {
        if (hottestRead === undefined || p.readUnits > hottestRead.readUnits) {
          hottestRead = {
            key: p.from === '' ? pk : `${pk} [${p.from}..]`,
            readUnits: p.readUnits,
            peakReadUnitsPerSecond: p.peakReadUnitsPerSecond,
          };
        }
        largest = Math.max(largest, p.largestItemBytes);
        if (hottest === undefined || p.peakUnitsPerSecond > hottest.peakWriteUnitsPerSecond) {
          hottest = {
            // A split-off partition is named by the sort key it starts at.
            key: p.from === '' ? pk : `${pk} [${p.from}..]`,
            peakWriteUnitsPerSecond: p.peakUnitsPerSecond,
            largestItemBytes: p.largestItemBytes,
          };
        }
      }
    }
    return {
      ...this.stats,
      hottestPartition: hottest,
      hottestReadPartition: hottestRead,
      largestItemBytes: largest,
      splits: this.#splits.map((split) => ({ ...split })),
    };
  }

  /** A new partition's state, its buckets full. */
  #newPartition(from: string, now: number): PartitionState {
    return {
      from,
      writeTokens: this.#wcu * this.#burst,
      readTokens: this.#rcu * this.#burst,
      updatedAt: now,
      second: Math.floor(now / 1000),
      unitsThisSecond: 0,
      peakUnitsPerSecond: 0,
      writeUnits: 0,
      throttled: 0,
      largestItemBytes: 0,
      heatSince: undefined,
      lastThrottledSecond: -1,
      readSecond: -1,
      readUnitsThisSecond: 0,
      peakReadUnitsPerSecond: 0,
      readUnits: 0,
    };
  }

  /** The partition holding `sk` under `pk` (the last one starting at or before it), its buckets refilled. */
  #partition(pk: string, sk: string): PartitionState {
    const now = this.#now();
    let partitions = this.#partitions.get(pk);
    if (partitions === undefined) {
      partitions = [this.#newPartition('', now)];
      this.#partitions.set(pk, partitions);
    }
    let i = partitions.length - 1;
    while (i > 0 && partitions[i]!.from > sk) i--;
    return this.#refill(partitions[i]!, now);
  }

  #refill(p: PartitionState, now: number): PartitionState {
    const elapsed = (now - p.updatedAt) / 1000;
    if (elapsed > 0) {
      p.writeTokens = Math.min(this.#wcu * this.#burst, p.writeTokens + elapsed * this.#wcu);
      p.readTokens = Math.min(this.#rcu * this.#burst, p.readTokens + elapsed * this.#rcu);
      p.updatedAt = now;
    }
    return p;
  }

  #throttle(pk: string, p: PartitionState): never {
    p.throttled += 1;
    this.stats.throttled += 1;
    this.#heat(pk, p);
    throw dynamoError(
      'ProvisionedThroughputExceededException',
      'The level of configured provisioned throughput for the table was exceeded.',
    );
  }

  #write(data: DynaliteRequest, keySource: Item, next: (old: Item | undefined) => Item | undefined) {
    this.stats.writeRequests += 1;
    const pk = keyString(keySource.pk);
    const sk = keyString(keySource.sk);
    const p = this.#partition(pk, sk);
    // Throttling is decided before the write (a throttled write changes nothing); at least one unit is needed.
    if (p.writeTokens < 1) this.#throttle(pk, p);
    const rows = this.#items.get(pk);
    const old = rows?.get(sk);
    const oldSize = old === undefined ? 0 : this.#sizeOf(old);
    const failed = dynaliteDb.checkConditional(data, old);
    let after: Item | undefined;
    if (failed == null) {
      after = next(old === undefined ? undefined : cloneAttributes(old));
      if (after !== undefined && data.Key !== undefined) Object.assign(after, cloneAttributes(data.Key));
    }
    const newSize = after === undefined ? 0 : dynaliteDb.itemSize(after);
    if (after !== undefined) this.#sizes.set(deepFreeze(after), newSize);
    const units = Math.max(1, Math.ceil(oldSize / 1024), Math.ceil(newSize / 1024));
    this.#consume(p, units, Math.max(oldSize, newSize));
    if (failed != null) {
      this.stats.conditionalFailures += 1;
      throw dynamoError('ConditionalCheckFailedException', 'The conditional request failed');
    }
    let target = rows;
    if (target === undefined) {
      target = new Map();
      this.#items.set(pk, target);
    }
    if (after === undefined) target.delete(sk);
    else target.set(sk, after);
    return data.ReturnValues === 'ALL_NEW' && after !== undefined ? { Attributes: after } : {};
  }

  #consume(p: PartitionState, units: number, itemBytes: number): void {
    p.writeTokens -= units;
    p.writeUnits += units;
    this.stats.writeUnits += units;
    const second = Math.floor(this.#now() / 1000);
    if (second !== p.second) {
      p.second = second;
      p.unitsThisSecond = 0;
    }
    p.unitsThisSecond += units;
    p.peakUnitsPerSecond = Math.max(p.peakUnitsPerSecond, p.unitsThisSecond);
    p.largestItemBytes = Math.max(p.largestItemBytes, itemBytes);
  }

  /**
   * A read of `items` (the page a request read under `pk`, or `sk` alone when it found nothing): billed
   * one unit per started 4 KB of the whole; each partition it touched spends the units of its own items,
   * and throttles the request if it has none left.
   */
  #read(pk: string, items: readonly Item[], sk: string): void {
    this.stats.readRequests += 1;
    let bytes = 0;
    const touched = new Map<PartitionState, number>();
    for (const item of items) {
      const size = this.#sizeOf(item);
      const p = this.#partition(pk, keyString(item.sk));
      touched.set(p, (touched.get(p) ?? 0) + size);
      bytes += size;
    }
    if (touched.size === 0) touched.set(this.#partition(pk, sk), 0);
    for (const p of touched.keys()) if (p.readTokens < 1) this.#throttle(pk, p);
    const second = Math.floor(this.#now() / 1000);
    for (const [p, partBytes] of touched) {
      const units = Math.max(1, Math.ceil(partBytes / 4096));
      p.readTokens -= units;
      p.readUnits += units;
      if (second !== p.readSecond) {
        p.readSecond = second;
        p.readUnitsThisSecond = 0;
      }
      p.readUnitsThisSecond += units;
      p.peakReadUnitsPerSecond = Math.max(p.peakReadUnitsPerSecond, p.readUnitsThisSecond);
    }
    this.stats.readUnits += Math.max(1, Math.ceil(bytes / 4096));
  }

  /**
   * Split for heat: a partition throttled in every second for `splitForHeatAfterSeconds` (a second without
   * a throttle starts the count again) splits at its middle sort key, if it holds two items or more.
   */
  #heat(pk: string, p: PartitionState): void {
    const now = this.#now();
    const second = Math.floor(now / 1000);
    if (p.heatSince === undefined || second > p.lastThrottledSecond + 1) p.heatSince = now;
    p.lastThrottledSecond = second;
    if (now - p.heatSince < this.#splitAfterMs) return;
    const partitions = this.#partitions.get(pk)!;
    const index = partitions.indexOf(p);
    const next = partitions[index + 1]?.from;
    const keys = [...(this.#items.get(pk)?.keys() ?? [])]
      .filter((sk) => sk >= p.from && (next === undefined || sk < next))
      .sort();
    if (keys.length < 2) return;
    const from = keys[Math.floor(keys.length / 2)]!;
    // Both halves start cool: the split-off one with full buckets, the old one keeps its tokens.
    p.heatSince = undefined;
    partitions.splice(index + 1, 0, this.#newPartition(from, now));
    this.#splits.push({ key: pk, atMs: now, from });
  }

  #get(data: DynaliteRequest) {
    const pk = keyString(data.Key!.pk);
    const sk = keyString(data.Key!.sk);
    const item = this.#items.get(pk)?.get(sk);
    this.#read(pk, item === undefined ? [] : [item], sk);
    return item === undefined ? {} : { Item: item };
  }

  #query(data: DynaliteRequest) {
    // The key condition's `pk = <value>` names the partition (whatever the placeholder is called); failing
    // that, probe each partition's first item with the condition.
    const pkValue = partitionValue(data._keyCondition?.expression);
    const pk = pkValue !== undefined ? keyString(pkValue) : this.#partitionOf(data);
    // `pk = :v` alone matches every item of the partition: no need to evaluate it per item.
    const onlyPartition =
      pkValue !== undefined &&
      (data._keyCondition?.expression as { type?: string } | undefined)?.type === '=';
    const rows = [...(this.#items.get(pk) ?? new Map<string, Item>())]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, item]) => item)
      .filter((item) => onlyPartition || dynaliteDb.matchesExprFilter(item, data._keyCondition!.expression));
    const start = data.ExclusiveStartKey?.sk !== undefined ? keyString(data.ExclusiveStartKey.sk) : undefined;
    const after = start === undefined ? rows : rows.filter((item) => keyString(item.sk) > start);
    const page = data.Limit !== undefined ? after.slice(0, data.Limit) : after;
    const filtered =
      data._filter === undefined
        ? page
        : page.filter((item) => dynaliteDb.matchesExprFilter(item, data._filter!.expression));
    this.#read(pk, page, '');
    const last = page[page.length - 1];
    return {
      // The stored (frozen) items, in an array of this request's own.
      Items: filtered,
      Count: filtered.length,
      ...(page.length < after.length && last !== undefined
        ? { LastEvaluatedKey: { pk: last.pk, sk: last.sk } }
        : {}),
    };
  }

  #sizeOf(item: Item): number {
    let size = this.#sizes.get(item);
    if (size === undefined) {
      size = dynaliteDb.itemSize(item);
      this.#sizes.set(item, size);
    }
    return size;
  }

  #partitionOf(data: DynaliteRequest): string {
    for (const [pk, rows] of this.#items) {
      const first = rows.values().next().value as Item | undefined;
      if (first !== undefined && dynaliteDb.matchesExprFilter(first, data._keyCondition!.expression))
        return pk;
    }
    return '';
  }
}

/** Parsed-expression fields dynalite's `validateExpressions` sets on a request. */
type ParsedFields = Pick<DynaliteRequest, '_updates' | '_condition' | '_keyCondition' | '_filter'>;

interface ParsedTemplate {
  /** dynalite's answer for this shape: an error message, or the parsed fields with placeholders in them. */
  readonly error: string | undefined;
  readonly fields: ParsedFields;
  /** The stand-in value objects the template holds, by the placeholder they stand for. */
  readonly values: Map<object, string>;
}

/** Prefix of the stand-in strings a template holds where a resolved attribute name goes. */
const NAME_MARK = '\u0000';

/**
 * dynalite's expression parsing, once per expression shape instead of once per request (its PEG parsers
 * were most of the model's CPU). A shape is the expression strings, the placeholders each request defines,
 * the type of each value and which names share a value; within a shape dynalite's parse differs only in
 * the names and values it substitutes. So the first request of a shape is validated by dynalite exactly
 * (its answer, error or not, is the shape's), and parsed a second time with stand-ins: a unique string per
 * name placeholder, a copy per value; later requests of the shape get that template with their own names
 * and values put back in. Expressions whose parse depends on a value's content (BETWEEN's bounds,
 * attribute_type's type name) bypass the cache.
 */
export class ExpressionCache {
  readonly #templates = new Map<string, ParsedTemplate>();
  hits = 0;
  misses = 0;

  /** Sets the parsed fields on `data` (as `validateExpressions` does); returns dynalite's error, if any. */
  parse(data: DynaliteRequest): string | undefined {
    const key = shapeOf(data);
    if (key === undefined) return dynaliteValidations.validateExpressions(data);
    let template = this.#templates.get(key);
    if (template === undefined) {
      this.misses += 1;
      template = buildTemplate(data);
      this.#templates.set(key, template);
      // The first request of a shape carries dynalite's own parse.
      return template.error;
    }
    this.hits += 1;
    if (template.error !== undefined) return template.error;
    const names = data.ExpressionAttributeNames ?? {};
    const values = data.ExpressionAttributeValues ?? {};
    const fill = (node: unknown): unknown => {
      if (typeof node === 'string') return node.startsWith(NAME_MARK) ? names[node.slice(1)] : node;
      if (node === null || typeof node !== 'object') return node;
      const placeholder = template.values.get(node);
      if (placeholder !== undefined) return values[placeholder];
      if (Array.isArray(node)) return node.map(fill);
      const out: Record<string, unknown> = {};
      // Object keys hold resolved names too (dynalite's `nestedPaths`, `pathHeads`).
      for (const k of Object.keys(node)) out[fill(k) as string] = fill((node as Record<string, unknown>)[k]);
      return out;
    };
    for (const field of ['_updates', '_condition', '_keyCondition', '_filter'] as const) {
      const parsed = template.fields[field];
      if (parsed !== undefined) (data as Record<string, unknown>)[field] = fill(parsed);
    }
    return undefined;
  }
}

function shapeOf(data: DynaliteRequest): string | undefined {
  const expressions = [
    data.UpdateExpression,
    data.ConditionExpression,
    data.KeyConditionExpression,
    data.FilterExpression,
  ];
  const text = expressions.join('\u0001');
  if (/between|attribute_type/i.test(text)) return undefined;
  const names = data.ExpressionAttributeNames;
  const values = data.ExpressionAttributeValues;
  const nameKeys = names === undefined ? '-' : Object.keys(names).sort();
  // Which placeholders share a resolved name (dynalite checks overlapping paths on resolved names).
  const nameShape =
    names === undefined
      ? '-'
      : (nameKeys as string[])
          .map((k) => (nameKeys as string[]).findIndex((j) => names[j] === names[k]))
          .join(',');
  const valueShape =
    values === undefined
      ? '-'
      : Object.keys(values)
          .sort()
          .map((k) => `${k}:${Object.keys(values[k] ?? {}).join('')}`)
          .join(',');
  return `${text}\u0002${String(nameKeys)}\u0002${nameShape}\u0002${valueShape}`;
}

function buildTemplate(data: DynaliteRequest): ParsedTemplate {
  const error = dynaliteValidations.validateExpressions(data);
  if (error !== undefined) return { error, fields: {}, values: new Map() };
  const names = data.ExpressionAttributeNames;
  const values = data.ExpressionAttributeValues;
  const standIns = new Map<object, string>();
  const probe: DynaliteRequest = {
    ...(data.UpdateExpression === undefined ? {} : { UpdateExpression: data.UpdateExpression }),
    ...(data.ConditionExpression === undefined ? {} : { ConditionExpression: data.ConditionExpression }),
    ...(data.KeyConditionExpression === undefined
      ? {}
      : { KeyConditionExpression: data.KeyConditionExpression }),
    ...(data.FilterExpression === undefined ? {} : { FilterExpression: data.FilterExpression }),
    ...(names === undefined
      ? {}
      : {
          ExpressionAttributeNames: Object.fromEntries(
            Object.keys(names).map((k) => [k, `${NAME_MARK}${k}`]),
          ),
        }),
    ...(values === undefined
      ? {}
      : {
          ExpressionAttributeValues: Object.fromEntries(
            Object.keys(values).map((k) => {
              const standIn = { ...values[k] } as AttributeValue;
              standIns.set(standIn, k);
              return [k, standIn];
            }),
          ),
        }),
  };
  const probeError = dynaliteValidations.validateExpressions(probe);
  if (probeError !== undefined)
    throw new Error(`expression template failed where the request parsed: ${probeError}`);
  return {
    error: undefined,
    fields: {
      _updates: probe._updates,
      _condition: probe._condition,
      _keyCondition: probe._keyCondition,
      _filter: probe._filter,
    },
    values: standIns,
  };
}

/** Freezes a stored item and everything in it (see `#sizes`); returns it. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
    Object.freeze(value);
  }
  return value;
}

/** Deep copy of attribute values (plain JSON data: faster than structuredClone for these small items). */
function cloneAttributes<T>(value: T): T {
  if (Array.isArray(value)) return value.map(cloneAttributes) as T;
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value)) out[key] = cloneAttributes((value as Record<string, unknown>)[key]);
    return out as T;
  }
  return value;
}

/** The value `pk` is compared equal to in a parsed key condition (dynalite's AST), if any. */
function partitionValue(node: unknown): AttributeValue | undefined {
  const n = node as { type?: string; args?: unknown[] } | undefined;
  if (n?.args === undefined) return undefined;
  if (n.type === '=') {
    const [a, b] = n.args;
    if (Array.isArray(a) && a.length === 1 && a[0] === 'pk' && !Array.isArray(b)) return b as AttributeValue;
    if (Array.isArray(b) && b.length === 1 && b[0] === 'pk' && !Array.isArray(a)) return a as AttributeValue;
  }
  if (n.type === 'and') return partitionValue(n.args[0]) ?? partitionValue(n.args[1]);
  return undefined;
}

function keyString(value: AttributeValue | undefined): string {
  if (value === undefined)
    throw dynamoError('ValidationException', 'The provided key element does not match the schema');
  return value.S ?? value.N ?? String(value.B);
}

// Port of dynalite 4.0.0 actions/updateItem.js `applyUpdateExpression` and `resolveValue` (MIT).
function applyUpdate(data: DynaliteRequest, old: Item | undefined): Item {
  const item: Item = old ?? {};
  const sections = data._updates?.sections ?? [];
  for (const section of sections) {
    if (section.type === 'set') {
      const val = resolveValue(section.val, item);
      if (typeof val === 'string') throw dynamoError('ValidationException', val);
      section.val = val;
    }
  }
  for (const section of sections) {
    const parent = dynaliteDb.mapPath(section.path.slice(0, -1), item) as
      | { M?: Record<string, AttributeValue>; L?: AttributeValue[] }
      | undefined;
    const root = section.path.length === 1 ? { M: item } : parent;
    const attr = section.path[section.path.length - 1]!;
    const container = typeof attr === 'number' ? root?.L : root?.M;
    if (container == null) {
      throw dynamoError(
        'ValidationException',
        'The document path provided in the update expression is invalid for update',
      );
    }
    const existing = (container as Record<string | number, AttributeValue | undefined>)[attr];
    if (section.type === 'remove') {
      if (Array.isArray(container)) container.splice(attr as number, 1);
      else delete (container as Record<string, unknown>)[attr];
    } else if (section.type === 'set') {
      (container as Record<string | number, unknown>)[attr] = section.val;
    } else if (section.type === 'add') {
      const val = section.val as { N?: string };
      if (section.attrType !== 'N' || val.N === undefined) {
        throw dynamoError('ValidationException', 'ADD of sets is not modelled');
      }
      if (existing !== undefined && existing.N === undefined) {
        throw dynamoError(
          'ValidationException',
          'An operand in the update expression has an incorrect data type',
        );
      }
      (container as Record<string | number, unknown>)[attr] = {
        N: String(Number(existing?.N ?? '0') + Number(val.N)),
      };
    } else {
      throw dynamoError('ValidationException', 'DELETE of set elements is not modelled');
    }
  }
  return item;
}

function resolveValue(val: unknown, item: Item): AttributeValue | string {
  if (Array.isArray(val)) {
    return (
      dynaliteDb.mapPath(val, item) ??
      'The provided expression refers to an attribute that does not exist in the item'
    );
  }
  const node = val as { type?: string; name?: string; args?: unknown[] } & AttributeValue;
  if (node.type === 'add' || node.type === 'subtract') {
    const a = resolveValue(node.args![0], item);
    if (typeof a === 'string') return a;
    const b = resolveValue(node.args![1], item);
    if (typeof b === 'string') return b;
    if (a.N === undefined || b.N === undefined) {
      return 'An operand in the update expression has an incorrect data type';
    }
    // Plain numbers (dynalite uses big.js): exact for the integers below 2^53 an item holds (epoch ms, counts).
    return { N: String(node.type === 'add' ? Number(a.N) + Number(b.N) : Number(a.N) - Number(b.N)) };
  }
  if (node.type === 'function' && node.name === 'if_not_exists') {
    return dynaliteDb.mapPath(node.args![0] as unknown[], item) ?? resolveValue(node.args![1], item);
  }
  if (node.type === 'function' && node.name === 'list_append') {
    const a = resolveValue(node.args![0], item);
    if (typeof a === 'string') return a;
    const b = resolveValue(node.args![1], item);
    if (typeof b === 'string') return b;
    if (a.L === undefined || b.L === undefined) {
      return 'An operand in the update expression has an incorrect data type';
    }
    return { L: [...a.L, ...b.L] };
  }
  return node;
}

interface SdkCommand {
  readonly input: object;
  readonly constructor: { readonly name: string };
}

/** Counts what one client sent, attempts included. */
export interface DynamoClientCounters {
  calls: number;
  attempts: number;
  retries: number;
}

/**
 * The client port: `send(command, { abortSignal })` as `DynamoDBClient` has it, with the latency of the
 * network and DynamoDB, and the SDK's standard retries of throttling and 5xx answers.
 */
export class DynamoModelClient {
  readonly counters: DynamoClientCounters = { calls: 0, attempts: 0, retries: 0 };
  readonly #table: DynamoTableModel;
  readonly #latency: () => number;
  readonly #random: () => number;

  constructor(table: DynamoTableModel, options: Pick<DynamoModelOptions, 'latency' | 'random'>) {
    this.#table = table;
    const latency = options.latency ?? { medianMs: 4, p99Ms: 12 };
    this.#random = options.random;
    this.#latency = lognormal(latency.medianMs, latency.p99Ms, options.random);
  }

  async send(command: SdkCommand, options: { abortSignal?: AbortSignal } = {}): Promise<unknown> {
    const operation = command.constructor.name.replace(/Command$/, '');
    const signal = options.abortSignal;
    this.counters.calls += 1;
    for (let attempt = 1; ; attempt++) {
      this.counters.attempts += 1;
      // Half the latency before DynamoDB decides, half after (the answer travels back).
      const latency = this.#latency();
      await wait(latency / 2, signal);
      let result: unknown;
      let failure: unknown;
      try {
        result = this.#table.execute(operation, command.input as DynaliteRequest);
      } catch (error) {
        failure = error;
      }
      await wait(latency / 2, signal);
      if (failure === undefined) return result;
      const name = (failure as { name?: string }).name;
      const throttled = name === 'ProvisionedThroughputExceededException';
      const retryable = throttled || (failure as { $fault?: string }).$fault === 'server';
      if (!retryable || attempt >= 3) throw failure;
      this.counters.retries += 1;
      const base = throttled ? 500 : 100;
      await wait(this.#random() * Math.min(20_000, base * 2 ** attempt), signal);
    }
  }

  /** Nothing to close (the SDK client's `destroy()`). */
  destroy(): void {}
}
