import { CreateTableCommand, DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { sleep, throwIfAborted } from './backoff.js';
import { InvalidSemaphoreOptionsError } from './errors.js';

/**
 * Creates the budgets' table (string `pk` and `sk`, on-demand) unless it exists, and waits until it is
 * active; an existing table with another key schema is refused. `signal` bounds the whole wait (a table
 * that never becomes active): every request and poll carries it. For local use and tests; in the cloud the
 * CDK stack creates it.
 */
export async function createBudgetTable(
  client: DynamoDBClient,
  tableName: string,
  signal?: AbortSignal,
): Promise<void> {
  const bounded = signal === undefined ? {} : { abortSignal: signal };
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
      bounded,
    );
  } catch (err) {
    throwIfAborted(signal);
    if ((err as { name?: unknown }).name !== 'ResourceInUseException') throw err;
  }
  for (;;) {
    throwIfAborted(signal);
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }), bounded);
    // Stryker disable next-line OptionalChaining,ArrayDeclaration: DescribeTable of an existing table always answers its Table and KeySchema.
    const keys = (Table?.KeySchema ?? []).map((k) => `${k.AttributeName}:${k.KeyType}`).join(',');
    if (keys !== 'pk:HASH,sk:RANGE') {
      throw new InvalidSemaphoreOptionsError(
        `table "${tableName}" exists with key schema ${keys}; a budget table needs pk (HASH) and sk (RANGE)`,
      );
    }
    // Stryker disable next-line OptionalChaining: DescribeTable of an existing table always answers its Table.
    if (Table?.TableStatus === 'ACTIVE') return;
    // Not active yet: a new on-demand table is active within seconds.
    await sleep(250, signal);
  }
}
