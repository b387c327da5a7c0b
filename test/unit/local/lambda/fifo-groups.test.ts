import type { SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { InvalidLocalOptionError } from '../../../../lib/local/errors.js';
import { checkFifoOptions, FifoGroupLocks } from '../../../../lib/local/lambda/fifo-groups.js';

function record(group?: string): SQSRecord {
  return { attributes: group === undefined ? {} : { MessageGroupId: group } } as unknown as SQSRecord;
}

describe('FifoGroupLocks: one running invocation per message group', () => {
  it('makes a batch wait until every one of its groups is released, and lets other groups through', async () => {
    const locks = new FifoGroupLocks();
    const releaseFirst = await locks.hold([record('a'), record('b')]);
    const order: string[] = [];
    const second = locks.hold([record('b')]).then((release) => {
      order.push('b');
      return release;
    });
    const other = await locks.hold([record('c')]);
    order.push('c');
    await Promise.resolve();
    expect(order).toEqual(['c']);
    releaseFirst();
    (await second)();
    other();
    expect(order).toEqual(['c', 'b']);
  });

  it('never blocks records without a group (standard queues)', async () => {
    const locks = new FifoGroupLocks();
    await locks.hold([record()]);
    await expect(locks.hold([record()])).resolves.toBeTypeOf('function');
  });
});

describe('checkFifoOptions', () => {
  it('refuses what Lambda refuses for a FIFO event source', () => {
    expect(() => checkFifoOptions({ batchSize: 11, maximumBatchingWindowMs: 0 })).toThrow(
      InvalidLocalOptionError,
    );
    expect(() => checkFifoOptions({ batchSize: 10, maximumBatchingWindowMs: 500 })).toThrow(
      /batching window/,
    );
    expect(() => checkFifoOptions({ batchSize: 10, maximumBatchingWindowMs: 0 })).not.toThrow();
  });
});
