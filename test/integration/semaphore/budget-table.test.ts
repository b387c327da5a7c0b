// DynamoRateBudget.createTable against a real DynamoDB wire protocol (dynalite here, DynamoDB Local in
// test:backends): the table it creates is the one a budget books on, a second call changes nothing, and a
// table of that name with another key schema is refused by name.
import { randomUUID } from 'node:crypto';
import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  type KeySchemaElement,
} from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { DynamoRateBudget } from '../../../lib/semaphore/index.js';
import { localClientConfig } from '../../support/local-aws.js';

const client = new DynamoDBClient(localClientConfig('dynamodb'));
afterAll(() => client.destroy());

const freshName = (label: string) => `${label}-${randomUUID().slice(0, 8)}`;

/** A booking of `writes` on budget `name` in `tableName`, far from any latest start or cutoff. */
const bookOn = (tableName: string, name: string, writes: number) => {
  const now = Date.now();
  return new DynamoRateBudget({ client, tableName, name, ceiling: 100 }).book({
    writes,
    latestStart: now + 600_000,
    writeBy: now + 600_000,
  });
};

/** Creates `tableName` with the given key schema (string attributes), as someone else's table would be. */
const createForeignTable = (tableName: string, keys: KeySchemaElement[]) =>
  client.send(
    new CreateTableCommand({
      TableName: tableName,
      AttributeDefinitions: keys.map((k) => ({ AttributeName: k.AttributeName, AttributeType: 'S' })),
      KeySchema: keys,
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );

describe('DynamoRateBudget.createTable', () => {
  it('creates an active on-demand table keyed by string pk and sk, on which a budget books', async () => {
    const tableName = freshName('budgets');
    await expect(DynamoRateBudget.createTable(client, tableName)).resolves.toBeUndefined();

    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    expect(Table).toMatchObject({
      TableStatus: 'ACTIVE',
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
    });
    expect(Table?.AttributeDefinitions).toEqual(
      expect.arrayContaining([
        { AttributeName: 'pk', AttributeType: 'S' },
        { AttributeName: 'sk', AttributeType: 'S' },
      ]),
    );
    expect(Table?.BillingModeSummary?.BillingMode).toBe('PAY_PER_REQUEST');
    await expect(bookOn(tableName, freshName('prefix'), 5)).resolves.toMatchObject({ writes: 5, rate: 100 });
  });

  it('is idempotent: a second call resolves and leaves the schedules already booked in place', async () => {
    const tableName = freshName('budgets');
    await DynamoRateBudget.createTable(client, tableName);
    const name = freshName('prefix');
    const first = await bookOn(tableName, name, 50);

    await expect(DynamoRateBudget.createTable(client, tableName)).resolves.toBeUndefined();
    await expect(DynamoRateBudget.createTable(client, tableName)).resolves.toBeUndefined();

    // The schedule survived: the next booking starts where the first one's slots end.
    const second = await bookOn(tableName, name, 10);
    expect(second.startAt).toBe(Math.max(first.endsAt, second.bookedAt));
    expect(first.endsAt).toBeGreaterThan(second.bookedAt);
  });

  it('refuses an existing table with another key schema, naming the table and its keys', async () => {
    const hashOnly = freshName('orders');
    await createForeignTable(hashOnly, [{ AttributeName: 'id', KeyType: 'HASH' }]);
    await expect(DynamoRateBudget.createTable(client, hashOnly)).rejects.toMatchObject({
      name: 'InvalidSemaphoreOptionsError',
      message: expect.stringContaining(`table "${hashOnly}" exists with key schema id:HASH`),
    });

    // The right names, the wrong roles: still not a budget table.
    const swapped = freshName('swapped');
    await createForeignTable(swapped, [
      { AttributeName: 'sk', KeyType: 'HASH' },
      { AttributeName: 'pk', KeyType: 'RANGE' },
    ]);
    await expect(DynamoRateBudget.createTable(client, swapped)).rejects.toMatchObject({
      name: 'InvalidSemaphoreOptionsError',
      message: expect.stringContaining(`table "${swapped}" exists with key schema sk:HASH,pk:RANGE`),
    });
  });
});
