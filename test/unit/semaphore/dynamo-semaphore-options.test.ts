// DynamoSemaphore's options (defaults and the typed errors for bad values) and createTable's wait for an
// ACTIVE table: no request is needed to check them, so the client is a recording stand-in.
import {
  CreateTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
  ResourceInUseException,
  ThrottlingException,
} from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import {
  DynamoSemaphore,
  type DynamoSemaphoreOptions,
  InvalidSemaphoreOptionsError,
} from '../../../lib/semaphore/index.js';

const unused = {
  send: () => Promise.reject(new Error('no request expected')),
} as unknown as DynamoDBClient;
const make = (options: Partial<DynamoSemaphoreOptions> & { limit: number }) =>
  new DynamoSemaphore({ client: unused, tableName: 't', name: 'prefix:t=acme', ...options });

describe('DynamoSemaphore options', () => {
  it('defaults: a 60 s lease, one shard per 64 permits, a 2 s give-back bound', () => {
    const sem = make({ limit: 70 });
    expect(sem.leaseMs).toBe(60_000);
    expect(sem.giveBackTimeoutMs).toBe(2_000);
    expect(sem.shards).toBe(2);
    expect(make({ limit: 64 }).shards).toBe(1);
    expect(make({ limit: 65 }).shards).toBe(2);
    expect(make({ limit: 1 }).shards).toBe(1);
    expect(make({ limit: 4, shards: 4 }).shards).toBe(4);
  });

  it('refuses a shard count outside 1..limit or not an integer, naming it', () => {
    for (const shards of [0, -1, 1.5, 5, Number.NaN]) {
      expect(() => make({ limit: 4, shards })).toThrow(InvalidSemaphoreOptionsError);
      expect(() => make({ limit: 4, shards })).toThrow(/shards must be an integer in 1\.\.limit \(4\)/);
    }
  });

  it('refuses a backoff base that is not positive or above the cap; base = cap is fine', () => {
    expect(() => make({ limit: 2, backoffBaseMs: 0 })).toThrow(
      /0 < backoffBaseMs <= backoffCapMs, got 0 and 500/,
    );
    expect(() => make({ limit: 2, backoffBaseMs: 50, backoffCapMs: 40 })).toThrow(
      InvalidSemaphoreOptionsError,
    );
    expect(() => make({ limit: 2, backoffBaseMs: 600 })).toThrow(InvalidSemaphoreOptionsError);
    expect(() => make({ limit: 2, backoffCapMs: 10 })).toThrow(/got 20 and 10/);
    expect(() => make({ limit: 2, backoffBaseMs: 40, backoffCapMs: 40 })).not.toThrow();
    expect(() => make({ limit: 2, backoffCapMs: 20 })).not.toThrow();
  });

  it('refuses a give-back bound that is not a positive finite number', () => {
    for (const giveBackTimeoutMs of [0, -5, Number.POSITIVE_INFINITY, Number.NaN]) {
      expect(() => make({ limit: 2, giveBackTimeoutMs })).toThrow(
        /giveBackTimeoutMs must be a positive number/,
      );
    }
    expect(make({ limit: 2, giveBackTimeoutMs: 1 }).giveBackTimeoutMs).toBe(1);
  });
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

describe('DynamoSemaphore.createTable', () => {
  it('waits (polling, not spinning) until the table is ACTIVE', async () => {
    const { client, sent } = tableClient(['CREATING', 'CREATING', 'ACTIVE']);
    const started = performance.now();
    await DynamoSemaphore.createTable(client, 'sem');
    expect(sent).toEqual([
      'CreateTableCommand',
      'DescribeTableCommand',
      'DescribeTableCommand',
      'DescribeTableCommand',
    ]);
    expect(performance.now() - started).toBeGreaterThanOrEqual(400);
  });

  it('an existing table is fine; any other create error is the caller’s', async () => {
    const exists = tableClient(['ACTIVE'], () => {
      throw new ResourceInUseException({ message: 'Table already exists', $metadata: {} });
    });
    await expect(DynamoSemaphore.createTable(exists.client, 'sem')).resolves.toBeUndefined();
    const throttled = tableClient(['ACTIVE'], () => {
      throw new ThrottlingException({ message: 'slow down', $metadata: {} });
    });
    await expect(DynamoSemaphore.createTable(throttled.client, 'sem')).rejects.toBeInstanceOf(
      ThrottlingException,
    );
    expect(throttled.sent).toEqual(['CreateTableCommand']);
  });
});
