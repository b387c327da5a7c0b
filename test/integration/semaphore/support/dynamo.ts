import { randomUUID } from 'node:crypto';
import { type AttributeValue, DynamoDBClient, QueryCommand } from '@aws-sdk/client-dynamodb';
import { DynamoSemaphore } from '../../../../lib/semaphore/index.js';
import { localAwsEndpoints, localClientConfig } from '../../../support/local-aws.js';

/** A client on the run's dynalite and a fresh semaphore table for one test file. */
export async function semaphoreTable(): Promise<{
  client: DynamoDBClient;
  tableName: string;
  endpoint: string;
}> {
  const client = new DynamoDBClient(localClientConfig('dynamodb'));
  const tableName = `semaphore-${randomUUID().slice(0, 8)}`;
  await DynamoSemaphore.createTable(client, tableName);
  return { client, tableName, endpoint: localAwsEndpoints().dynamodb };
}

/** Every item of semaphore `name` (both kinds), strongly consistent. */
export async function semaphoreItems(
  client: DynamoDBClient,
  tableName: string,
  name: string,
): Promise<Record<string, AttributeValue>[]> {
  const { Items = [] } = await client.send(
    new QueryCommand({
      TableName: tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': { S: `sem#${name}` } },
      ConsistentRead: true,
    }),
  );
  return Items;
}

export interface StoredShard {
  sk: string;
  capacity: number;
  used: number;
  holders: Record<string, { n: number; until: number }>;
}

/** The stored shard items of semaphore `name`, read straight from the table (not through the semaphore). */
export async function storedShards(
  client: DynamoDBClient,
  tableName: string,
  name: string,
): Promise<StoredShard[]> {
  const Items = await semaphoreItems(client, tableName, name);
  return Items.map((item) => ({
    sk: item.sk!.S!,
    capacity: Number(item.capacity!.N),
    used: Number(item.used!.N),
    holders: Object.fromEntries(
      Object.entries(item.holders!.M!).map(([fence, v]) => [
        fence,
        { n: Number(v.M!.n!.N), until: Number(v.M!.until!.N) },
      ]),
    ),
  }));
}

export const totalUsed = (shards: readonly StoredShard[]) => shards.reduce((sum, s) => sum + s.used, 0);

export interface StoredAdaptiveShard {
  sk: string;
  capacity: number;
  free: number;
  latencyMs: number;
  decreasedAt: number;
  /** The sum of the holder entries' permits. */
  held: number;
  holders: Record<string, { n: number; until: number }>;
}

/** The stored adaptive shard items of semaphore `name`, read straight from the table. */
export async function storedAdaptiveShards(
  client: DynamoDBClient,
  tableName: string,
  name: string,
): Promise<StoredAdaptiveShard[]> {
  const Items = await semaphoreItems(client, tableName, name);
  return Items.map((item) => {
    const holders = Object.fromEntries(
      Object.entries(item.holders!.M!).map(([fence, v]) => [
        fence,
        { n: Number(v.M!.n!.N), until: Number(v.M!.until!.N) },
      ]),
    );
    return {
      sk: item.sk!.S!,
      capacity: Number(item.capacity!.N),
      free: Number(item.free!.N),
      latencyMs: Number(item.latencyMs!.N),
      decreasedAt: Number(item.decreasedAt!.N),
      held: Object.values(holders).reduce((sum, h) => sum + h.n, 0),
      holders,
    };
  });
}
