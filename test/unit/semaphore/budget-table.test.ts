// DynamoRateBudget.createTable's requests, on a recording stand-in client: it waits for an ACTIVE table by
// polling, takes an existing table as created, and leaves any other create error to the caller. The same
// calls against dynalite: test/integration/semaphore/budget-table.test.ts.
import {
  CreateTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  ResourceInUseException,
  ThrottlingException,
} from '@aws-sdk/client-dynamodb';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DynamoRateBudget } from '../../../lib/semaphore/index.js';

afterEach(() => {
  vi.useRealTimers();
});

/** A client whose DescribeTable answers the given statuses in turn (the last one repeats). */
function tableClient(statuses: string[], create: () => void = () => {}) {
  const sent: string[] = [];
  const client = {
    async send(command: object) {
      sent.push(command.constructor.name);
      if (command instanceof CreateTableCommand) {
        create();
        return {};
      }
      if (command instanceof DescribeTableCommand) {
        const status = statuses.length > 1 ? statuses.shift() : statuses[0];
        return {
          Table: {
            TableStatus: status,
            KeySchema: [
              { AttributeName: 'pk', KeyType: 'HASH' },
              { AttributeName: 'sk', KeyType: 'RANGE' },
            ],
          },
        };
      }
      throw new Error(`unexpected ${command.constructor.name}`);
    },
  };
  return { client: client as unknown as DynamoDBClient, sent };
}

describe('DynamoRateBudget.createTable', () => {
  it('waits, polling every 250 ms rather than spinning, until the table is ACTIVE', async () => {
    vi.useFakeTimers();
    const { client, sent } = tableClient(['CREATING', 'CREATING', 'ACTIVE']);
    let done = false;
    const created = DynamoRateBudget.createTable(client, 'budgets').then(() => {
      done = true;
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(sent).toEqual(['CreateTableCommand', 'DescribeTableCommand']);
    await vi.advanceTimersByTimeAsync(249);
    expect(sent).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(sent).toHaveLength(3);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(250);
    await created;
    expect(done).toBe(true);
    expect(sent).toEqual([
      'CreateTableCommand',
      'DescribeTableCommand',
      'DescribeTableCommand',
      'DescribeTableCommand',
    ]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('an existing table is fine; any other create error is the caller’s, and nothing else is sent', async () => {
    const exists = tableClient(['ACTIVE'], () => {
      throw new ResourceInUseException({ message: 'Table already exists', $metadata: {} });
    });
    await expect(DynamoRateBudget.createTable(exists.client, 'budgets')).resolves.toBeUndefined();
    expect(exists.sent).toEqual(['CreateTableCommand', 'DescribeTableCommand']);
    const throttled = tableClient(['ACTIVE'], () => {
      throw new ThrottlingException({ message: 'slow down', $metadata: {} });
    });
    await expect(DynamoRateBudget.createTable(throttled.client, 'budgets')).rejects.toBeInstanceOf(
      ThrottlingException,
    );
    expect(throttled.sent).toEqual(['CreateTableCommand']);
  });

  it('a table that never becomes ACTIVE is waited for only until the signal aborts, with its reason', async () => {
    vi.useFakeTimers();
    const { client, sent } = tableClient(['CREATING']);
    const reason = new Error('provisioning gave up');
    const controller = new AbortController();
    const created = DynamoRateBudget.createTable(client, 'budgets', { signal: controller.signal });
    const rejected = expect(created).rejects.toBe(reason);
    await vi.advanceTimersByTimeAsync(1_000);
    controller.abort(reason);
    await rejected;
    const polls = sent.length;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(sent).toHaveLength(polls);
    expect(vi.getTimerCount()).toBe(0);
  });
});
