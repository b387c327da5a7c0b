import { randomUUID } from 'node:crypto';
import {
  ConditionalCheckFailedException,
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  GetItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localClientConfig } from '../../../support/local-aws.js';

// Every DynamoDB call the project makes, through the real SDK v3 client, on the semaphore table's shape.
describe('DynamoDB calls against the local stack', () => {
  const dynamodb = new DynamoDBClient(localClientConfig('dynamodb'));
  const tableName = `it-table-${randomUUID().slice(0, 8)}`;

  beforeAll(async () => {
    await dynamodb.send(
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
    for (;;) {
      const { Table } = await dynamodb.send(new DescribeTableCommand({ TableName: tableName }));
      if (Table?.TableStatus === 'ACTIVE') break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });
  afterAll(() => dynamodb.destroy());

  it('describes the table with its key schema and on-demand billing', async () => {
    const { Table } = await dynamodb.send(new DescribeTableCommand({ TableName: tableName }));
    expect(Table?.KeySchema).toEqual([
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ]);
    expect(Table?.BillingModeSummary?.BillingMode).toBe('PAY_PER_REQUEST');
  });

  const key = (shard: number) => ({ pk: { S: 'sem#it' }, sk: { S: `shard#${shard}` } });
  const acquire = (shard: number, lease: string, n: number, capacity: number) =>
    dynamodb.send(
      new UpdateItemCommand({
        TableName: tableName,
        Key: key(shard),
        UpdateExpression: 'SET holders.#lease = :entry, used = used + :n',
        ConditionExpression: 'used <= :max',
        ExpressionAttributeNames: { '#lease': lease },
        ExpressionAttributeValues: {
          ':entry': { M: { n: { N: String(n) }, until: { N: '9999999999999' } } },
          ':n': { N: String(n) },
          ':max': { N: String(capacity - n) },
        },
        ReturnValues: 'ALL_NEW',
      }),
    );

  it('runs the semaphore pattern: if_not_exists init, conditional acquire, conditional release, Get and Query', async () => {
    for (const shard of [0, 1]) {
      await dynamodb.send(
        new UpdateItemCommand({
          TableName: tableName,
          Key: key(shard),
          UpdateExpression:
            'SET #capacity = if_not_exists(#capacity, :c), used = if_not_exists(used, :z), holders = if_not_exists(holders, :m)',
          // `capacity` is a DynamoDB reserved word: it must go through a name placeholder.
          ExpressionAttributeNames: { '#capacity': 'capacity' },
          ExpressionAttributeValues: { ':c': { N: '5' }, ':z': { N: '0' }, ':m': { M: {} } },
        }),
      );
    }
    const granted = await acquire(0, 'lease-a', 3, 5);
    expect(granted.Attributes?.used).toEqual({ N: '3' });
    // 3 + 3 > 5: the condition refuses, and nothing changes.
    await expect(acquire(0, 'lease-b', 3, 5)).rejects.toBeInstanceOf(ConditionalCheckFailedException);
    await acquire(0, 'lease-b', 2, 5);

    await dynamodb.send(
      new UpdateItemCommand({
        TableName: tableName,
        Key: key(0),
        UpdateExpression: 'REMOVE holders.#lease SET used = used - :n',
        ConditionExpression: 'attribute_exists(holders.#lease)',
        ExpressionAttributeNames: { '#lease': 'lease-a' },
        ExpressionAttributeValues: { ':n': { N: '3' } },
      }),
    );
    // A second release of the same lease is refused: the lease id fences it.
    await expect(
      dynamodb.send(
        new UpdateItemCommand({
          TableName: tableName,
          Key: key(0),
          UpdateExpression: 'REMOVE holders.#lease SET used = used - :n',
          ConditionExpression: 'attribute_exists(holders.#lease)',
          ExpressionAttributeNames: { '#lease': 'lease-a' },
          ExpressionAttributeValues: { ':n': { N: '3' } },
        }),
      ),
    ).rejects.toMatchObject({ name: 'ConditionalCheckFailedException' });

    const { Item } = await dynamodb.send(
      new GetItemCommand({ TableName: tableName, Key: key(0), ConsistentRead: true }),
    );
    expect(Item?.used).toEqual({ N: '2' });
    expect(Object.keys(Item?.holders?.M ?? {})).toEqual(['lease-b']);

    const { Items } = await dynamodb.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :shard)',
        ExpressionAttributeValues: { ':pk': { S: 'sem#it' }, ':shard': { S: 'shard#' } },
        ConsistentRead: true,
      }),
    );
    expect(Items?.map((i) => i.sk?.S)).toEqual(['shard#0', 'shard#1']);
    expect(Items?.map((i) => i.used?.N)).toEqual(['2', '0']);
  });
});
