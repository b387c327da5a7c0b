// The three DynamoDB requests every semaphore item goes through (lib/semaphore/semaphore-items.ts), against
// a scripted client: what each request carries (key, expressions, only the names it uses, the caller's
// signal), which answers mean "condition failed" (only ConditionalCheckFailedException), a missing table as
// a typed error, a Query read across all its pages, and expired holders removed at most 25 per write.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { SemaphoreTableNotFoundError } from '../../../lib/semaphore/errors.js';
import { isConditionalFailure, pickNames, SemaphoreItems } from '../../../lib/semaphore/semaphore-items.js';

interface Sent {
  command: string;
  input: Record<string, unknown>;
  signal: AbortSignal | undefined;
}

/** A client answering each request with the next of `answers` (a value, or an Error to reject with). */
function scripted(...answers: unknown[]) {
  const sent: Sent[] = [];
  const client = {
    async send(
      command: { constructor: { name: string }; input: Record<string, unknown> },
      options?: { abortSignal?: AbortSignal },
    ) {
      sent.push({ command: command.constructor.name, input: command.input, signal: options?.abortSignal });
      const answer = answers.shift();
      if (answer instanceof Error) throw answer;
      return answer ?? {};
    },
  };
  return { client: client as unknown as DynamoDBClient, sent };
}

const named = (name: string) => Object.assign(new Error(name), { name });
const signal = new AbortController().signal;

describe('SemaphoreItems', () => {
  it('keys every item by the semaphore name', () => {
    expect(new SemaphoreItems(scripted().client, 't', 'prefix:t=acme').pk).toBe('sem#prefix:t=acme');
  });

  it('update: one conditional UpdateItem with only the names it uses; true when applied', async () => {
    const { client, sent } = scripted({});
    const items = new SemaphoreItems(client, 'table', 'x');
    const applied = await items.update(
      'shard#0',
      'SET #used = #used + :n',
      'attribute_exists(#holders.#lease)',
      { '#lease': 'fence-1', '#unused': 'nope' },
      { ':n': { N: '1' } },
      signal,
    );
    expect(applied).toBe(true);
    expect(sent).toEqual([
      {
        command: 'UpdateItemCommand',
        input: {
          TableName: 'table',
          Key: { pk: { S: 'sem#x' }, sk: { S: 'shard#0' } },
          UpdateExpression: 'SET #used = #used + :n',
          ConditionExpression: 'attribute_exists(#holders.#lease)',
          ExpressionAttributeNames: { '#used': 'used', '#holders': 'holders', '#lease': 'fence-1' },
          ExpressionAttributeValues: { ':n': { N: '1' } },
        },
        signal,
      },
    ]);
  });

  it('update: false only for a failed condition; throttling, validation and a missing table are errors', async () => {
    const update = (answer: unknown) =>
      new SemaphoreItems(scripted(answer).client, 'table', 'x').update(
        's',
        'SET #free = :f',
        '#free > :f',
        {},
        {},
        undefined,
      );
    expect(await update(named('ConditionalCheckFailedException'))).toBe(false);
    await expect(update(named('ProvisionedThroughputExceededException'))).rejects.toMatchObject({
      name: 'ProvisionedThroughputExceededException',
    });
    await expect(update(named('ValidationException'))).rejects.toMatchObject({ name: 'ValidationException' });
    const missing = named('ResourceNotFoundException');
    const err = await update(missing).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SemaphoreTableNotFoundError);
    expect((err as Error).cause).toBe(missing);
    // A rejection that is not even an object passes through unchanged (no TypeError from looking at it).
    const nothing = { send: () => Promise.reject(undefined) } as unknown as DynamoDBClient;
    const rejected = await new SemaphoreItems(nothing, 'table', 'x')
      .update('s', 'SET #free = :f', '#free > :f', {}, {}, undefined)
      .then(
        () => 'resolved',
        (e: unknown) => ({ rejectedWith: e }),
      );
    expect(rejected).toEqual({ rejectedWith: undefined });
    expect(isConditionalFailure(undefined)).toBe(false);
    expect(isConditionalFailure(null)).toBe(false);
  });

  it('createIfAbsent: a conditional Put that loses its race silently; any other error is thrown', async () => {
    const { client, sent } = scripted(named('ConditionalCheckFailedException'), named('ThrottlingException'));
    const items = new SemaphoreItems(client, 'table', 'x');
    await items.createIfAbsent('shard#1', { used: { N: '0' } }, signal);
    await expect(items.createIfAbsent('shard#1', {}, undefined)).rejects.toMatchObject({
      name: 'ThrottlingException',
    });
    expect(sent[0]).toEqual({
      command: 'PutItemCommand',
      input: {
        TableName: 'table',
        Item: { pk: { S: 'sem#x' }, sk: { S: 'shard#1' }, used: { N: '0' } },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
      signal,
    });
  });

  it('readAll: a strongly consistent Query of the partition, every page of it', async () => {
    const a = { sk: { S: 'shard#0' } };
    const b = { sk: { S: 'shard#1' } };
    const last = { pk: { S: 'sem#x' }, sk: { S: 'shard#0' } };
    const { client, sent } = scripted({ Items: [a], LastEvaluatedKey: last }, { Items: [b] }, {});
    const items = new SemaphoreItems(client, 'table', 'x');
    expect(await items.readAll(signal)).toEqual([a, b]);
    expect(sent.map((s) => s.input)).toEqual([
      {
        TableName: 'table',
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': { S: 'sem#x' } },
        ConsistentRead: true,
        ExclusiveStartKey: undefined,
      },
      expect.objectContaining({ ExclusiveStartKey: last }),
    ]);
    expect(sent.every((s) => s.signal === signal)).toBe(true);
    expect(await items.readAll(undefined)).toEqual([]);
  });

  it('setHolderUntil: moves one holder entry, conditional on it still being there', async () => {
    const { client, sent } = scripted({}, named('ConditionalCheckFailedException'));
    const items = new SemaphoreItems(client, 'table', 'x');
    expect(await items.setHolderUntil('shard#0', 'f1', 1234, signal)).toBe(true);
    expect(await items.setHolderUntil('shard#0', 'f1', 1234, signal)).toBe(false);
    expect(sent[0]?.input).toMatchObject({
      UpdateExpression: 'SET #holders.#lease.#until = :until',
      ConditionExpression: 'attribute_exists(#holders.#lease)',
      ExpressionAttributeNames: { '#holders': 'holders', '#lease': 'f1', '#until': 'until' },
      ExpressionAttributeValues: { ':until': { N: '1234' } },
    });
  });

  it('removeExpired: one write for up to 25 holders, each conditional on its expiry and count read, freeing their sum', async () => {
    const expired = Array.from({ length: 30 }, (_, i) => [`f${i}`, { n: i + 1, until: 100 + i }] as const);
    const { client, sent } = scripted({}, named('ConditionalCheckFailedException'));
    const items = new SemaphoreItems(client, 'table', 'x');
    // 1 + 2 + ... + 25 = 325: only the first 25 in this write.
    expect(await items.removeExpired('shard#0', expired, '#used = #used - :freed', signal)).toBe(325);
    const input = sent[0]!.input as {
      UpdateExpression: string;
      ConditionExpression: string;
      ExpressionAttributeNames: Record<string, string>;
      ExpressionAttributeValues: Record<string, { N: string }>;
    };
    expect(input.UpdateExpression).toBe(
      `REMOVE ${Array.from({ length: 25 }, (_, i) => `#holders.#h${i}`).join(', ')} SET #used = #used - :freed`,
    );
    expect(input.ConditionExpression).toBe(
      Array.from(
        { length: 25 },
        (_, i) => `#holders.#h${i}.#until = :u${i} AND #holders.#h${i}.n = :n${i}`,
      ).join(' AND '),
    );
    expect(input.ExpressionAttributeNames['#h24']).toBe('f24');
    expect(input.ExpressionAttributeNames['#h25']).toBeUndefined();
    expect(input.ExpressionAttributeValues[':u3']).toEqual({ N: '103' });
    expect(input.ExpressionAttributeValues[':n3']).toEqual({ N: '4' });
    expect(input.ExpressionAttributeValues[':freed']).toEqual({ N: '325' });
    // Someone reclaimed, extended or resized first: nothing freed by this write.
    expect(await items.removeExpired('shard#0', expired.slice(0, 2), '#free = #free + :freed', signal)).toBe(
      0,
    );
    // Nothing expired: no request at all.
    expect(await items.removeExpired('shard#0', [], '#free = #free + :freed', signal)).toBe(0);
    expect(sent).toHaveLength(2);
  });
});

describe('pickNames', () => {
  it('sends exactly the placeholders an expression uses, the extra ones included', () => {
    expect(pickNames('#limit = :l AND #shards = :s')).toEqual({ '#limit': 'limit', '#shards': 'shards' });
    expect(pickNames('SET #capacity = :c, #decreasedAt = :a, #latency = :l, #free = :f')).toEqual({
      '#capacity': 'capacity',
      '#decreasedAt': 'decreasedAt',
      '#latency': 'latencyMs',
      '#free': 'free',
    });
    expect(pickNames('#a', { '#a': 'x', '#b': 'y' })).toEqual({ '#a': 'x' });
  });
});
