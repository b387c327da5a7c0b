import {
  type AttributeValue,
  type DynamoDBClient,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { guardTable, isConditionalFailure, pickNames } from './shard-table.js';

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
}
