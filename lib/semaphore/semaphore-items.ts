import {
  type AttributeValue,
  type DynamoDBClient,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { SemaphoreTableNotFoundError } from './errors.js';

/** Placeholders of the item attributes (`limit` is a reserved word, so every name goes through one). */
const names = {
  '#free': 'free',
  '#latency': 'latencyMs',
  '#decreasedAt': 'decreasedAt',
  '#capacity': 'capacity',
  '#used': 'used',
  '#holders': 'holders',
  '#limit': 'limit',
  '#shards': 'shards',
} as const;

export const num = (n: number): AttributeValue => ({ N: String(n) });

const MAX_RECLAIM_PER_WRITE = 25;

// Expression attribute names must only be sent when the expression uses them (DynamoDB rejects unused ones).
export function pickNames(expressions: string, extra: Record<string, string> = {}): Record<string, string> {
  const all: Record<string, string> = { ...names, ...extra };
  return Object.fromEntries(Object.entries(all).filter(([placeholder]) => expressions.includes(placeholder)));
}

export function isConditionalFailure(err: unknown): boolean {
  return (err as { name?: unknown } | null)?.name === 'ConditionalCheckFailedException';
}

/** Maps a missing table to a typed error; everything else passes through unchanged. */
export async function guardTable<T>(tableName: string, request: Promise<T>): Promise<T> {
  try {
    return await request;
  } catch (err) {
    if ((err as { name?: unknown } | null)?.name === 'ResourceNotFoundException') {
      throw new SemaphoreTableNotFoundError(tableName, { cause: err });
    }
    throw err;
  }
}

/**
 * The items of one semaphore (`pk = sem#<name>`), whatever their sort keys: the three requests both the
 * static (`ShardTable`) and the adaptive (`AdaptiveShardTable`) shard tables are made of. Every request
 * carries the caller's abort signal; a missing table becomes `SemaphoreTableNotFoundError`.
 */
export class SemaphoreItems {
  readonly pk: string;

  constructor(
    private readonly client: DynamoDBClient,
    readonly tableName: string,
    name: string,
  ) {
    this.pk = `sem#${name}`;
  }

  /** A conditional `UpdateItem` on item `sk`: `true` when it applied, `false` when its condition failed. */
  async update(
    sk: string,
    update: string,
    condition: string,
    extraNames: Record<string, string>,
    values: Record<string, AttributeValue>,
    signal: AbortSignal | undefined,
  ): Promise<boolean> {
    try {
      await guardTable(
        this.tableName,
        this.client.send(
          new UpdateItemCommand({
            TableName: this.tableName,
            Key: { pk: { S: this.pk }, sk: { S: sk } },
            UpdateExpression: update,
            ConditionExpression: condition,
            ExpressionAttributeNames: pickNames(`${update} ${condition}`, extraNames),
            ExpressionAttributeValues: values,
          }),
          { abortSignal: signal },
        ),
      );
      return true;
    } catch (err) {
      if (isConditionalFailure(err)) return false;
      throw err;
    }
  }

  /** Puts item `sk` with `attributes` unless it exists (a lost creation race is harmless). */
  async createIfAbsent(
    sk: string,
    attributes: Record<string, AttributeValue>,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    try {
      await guardTable(
        this.tableName,
        this.client.send(
          new PutItemCommand({
            TableName: this.tableName,
            Item: { pk: { S: this.pk }, sk: { S: sk }, ...attributes },
            ConditionExpression: 'attribute_not_exists(pk)',
          }),
          { abortSignal: signal },
        ),
      );
    } catch (err) {
      if (!isConditionalFailure(err)) throw err;
    }
  }

  /** Every item of the semaphore (callers keep the sort keys they own), strongly consistent, all pages. */
  async readAll(signal: AbortSignal | undefined): Promise<Record<string, AttributeValue>[]> {
    const items: Record<string, AttributeValue>[] = [];
    let startKey: Record<string, AttributeValue> | undefined;
    do {
      const page = await guardTable(
        this.tableName,
        this.client.send(
          new QueryCommand({
            TableName: this.tableName,
            KeyConditionExpression: 'pk = :pk',
            ExpressionAttributeValues: { ':pk': { S: this.pk } },
            ConsistentRead: true,
            ExclusiveStartKey: startKey,
          }),
          { abortSignal: signal },
        ),
      );
      items.push(...(page.Items ?? []));
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined);
    return items;
  }

  /** Moves lease `fence`'s expiry on item `sk`; `false` when its holder entry is gone (reclaimed). */
  setHolderUntil(sk: string, fence: string, until: number, signal: AbortSignal | undefined) {
    return this.update(
      sk,
      'SET #holders.#lease.#until = :until',
      'attribute_exists(#holders.#lease)',
      { '#lease': fence, '#until': 'until' },
      { ':until': num(until) },
      signal,
    );
  }

  /**
   * Removes expired holders of item `sk` (at most 25 per write, bounding the expression; the next acquirer
   * that finds the item full reclaims the rest) and hands their permits back with `counter` (an update
   * clause using `:freed`: the static items subtract from `used`, the adaptive ones add to `free`).
   * Conditional on each entry's `until` and `n` being unchanged since read, so a holder that extended in
   * between keeps its permits, and one that resized (`Lease.resize`) is not freed by the count it had.
   * Resolves the permits freed, 0 when someone else reclaimed, extended or resized first.
   */
  async removeExpired(
    sk: string,
    expired: readonly (readonly [string, { readonly n: number; readonly until: number }])[],
    counter: string,
    signal: AbortSignal | undefined,
  ): Promise<number> {
    const batch = expired.slice(0, MAX_RECLAIM_PER_WRITE);
    if (batch.length === 0) return 0;
    const extraNames: Record<string, string> = { '#until': 'until' };
    const values: Record<string, AttributeValue> = {};
    let freed = 0;
    batch.forEach(([fence, entry], i) => {
      extraNames[`#h${i}`] = fence;
      values[`:u${i}`] = num(entry.until);
      values[`:n${i}`] = num(entry.n);
      freed += entry.n;
    });
    values[':freed'] = num(freed);
    const ok = await this.update(
      sk,
      `REMOVE ${batch.map((_, i) => `#holders.#h${i}`).join(', ')} SET ${counter}`,
      batch.map((_, i) => `#holders.#h${i}.#until = :u${i} AND #holders.#h${i}.n = :n${i}`).join(' AND '),
      extraNames,
      values,
      signal,
    );
    return ok ? freed : 0;
  }
}
