// The static semaphore's shard items as read back (dynalite): only `shard#<digits>` sort keys are shards
// (an adaptive semaphore of the same name keeps its items in the same partition), and attributes or holder
// fields that are missing read as 0 instead of NaN.
import { randomUUID } from 'node:crypto';
import { type AttributeValue, type DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { ShardTable } from '../../../lib/semaphore/shard-table.js';
import { semaphoreTable } from './support/dynamo.js';

let client: DynamoDBClient;
let tableName: string;

beforeAll(async () => {
  ({ client, tableName } = await semaphoreTable());
});

const put = (name: string, sk: string, attributes: Record<string, AttributeValue> = {}) =>
  client.send(
    new PutItemCommand({
      TableName: tableName,
      Item: { pk: { S: `sem#${name}` }, sk: { S: sk }, ...attributes },
    }),
  );

describe('ShardTable.readAll (dynalite)', () => {
  it('reads only `shard#<digits>` sort keys, any number of digits; missing attributes read as 0', async () => {
    const name = `shard-keys-${randomUUID().slice(0, 8)}`;
    for (const sk of ['adaptive#0', 'shard#1x', 'xshard#2', 'shard#', 'shard#12']) {
      await put(name, sk, { capacity: { N: '5' } });
    }
    await put(name, 'shard#3');
    const items = await new ShardTable(client, tableName, name, 4, 1).readAll();
    expect(items.map((i) => i.index).sort((x, y) => x - y)).toEqual([3, 12]);
    expect(items.find((i) => i.index === 3)).toEqual({
      index: 3,
      capacity: 0,
      used: 0,
      limit: 0,
      shards: 0,
      holders: new Map(),
    });
  });

  it('holder entries missing their count or expiry read as 0', async () => {
    const name = `shard-holders-${randomUUID().slice(0, 8)}`;
    await put(name, 'shard#0', {
      holders: {
        M: {
          whole: { M: { n: { N: '2' }, until: { N: '99' } } },
          empty: { M: {} },
          odd: { N: '7' },
        },
      },
    });
    const [item] = await new ShardTable(client, tableName, name, 4, 1).readAll();
    expect(item?.holders).toEqual(
      new Map([
        ['whole', { n: 2, until: 99 }],
        ['empty', { n: 0, until: 0 }],
        ['odd', { n: 0, until: 0 }],
      ]),
    );
  });
});
