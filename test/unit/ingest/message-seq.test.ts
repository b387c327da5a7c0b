// Issue 15: `seq` in contract v1, its SentTimestamp stand-in, and the Producer's monotonic source.
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import {
  InvalidMessageError,
  MonotonicSeq,
  Producer,
  parseIngestMessage,
  seqFromSentTimestamp,
} from '../../../lib/ingest/index.js';
import { body } from './handler/support.js';

/** A contract-v1 upsert of acme/orders/o-1 with `extra` envelope fields (any value, valid or not). */
const upsert = (extra: Record<string, unknown>) =>
  JSON.stringify({ ...JSON.parse(body({ id: 'o-1' })), ...extra });

describe('seq in contract v1', () => {
  it('keeps an explicit seq, including 0 and 2^53 - 1', () => {
    for (const seq of [0, 1, 1_733_000_000_000_000, Number.MAX_SAFE_INTEGER]) {
      const write = parseIngestMessage(upsert({ seq }), { messageId: 'm', sentTimestamp: '5' });
      expect(write).toMatchObject({ seq, seqSource: 'message' });
    }
  });

  it.each([
    ['negative', -1],
    ['fractional', 1.5],
    ['beyond 2^53 - 1', 2 ** 53],
    ['a string', '17'],
    ['null', null],
    ['a boolean', true],
  ])('refuses a seq that is %s with invalid-seq', (_name, seq) => {
    const error = (() => {
      try {
        parseIngestMessage(upsert({ seq }), { messageId: 'm' });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(InvalidMessageError);
    expect((error as InvalidMessageError).reason).toBe('invalid-seq');
    expect((error as InvalidMessageError).detail).toMatch(/^seq: /);
  });

  it('without seq: SentTimestamp x 1000, or 0 without a usable timestamp', () => {
    expect(parseIngestMessage(upsert({}), { messageId: 'm', sentTimestamp: '1733000000123' })).toMatchObject({
      seq: 1_733_000_000_123_000,
      seqSource: 'sent-timestamp',
    });
    for (const bad of [undefined, '', 'soon', '-5', '1.5', String(2 ** 53)]) {
      expect(seqFromSentTimestamp(bad), String(bad)).toBe(0);
    }
    expect(seqFromSentTimestamp(42)).toBe(42_000);
  });
});

describe('MonotonicSeq', () => {
  it('is ms x 1000 from the clock and never goes backwards, even when the clock does', () => {
    const times = [1000, 1000, 1000, 999, 1001, 500];
    let i = 0;
    const seq = new MonotonicSeq(() => times[i++]!);
    const values = times.map(() => seq.next());
    expect(values).toEqual([1_000_000, 1_000_001, 1_000_002, 1_000_003, 1_001_000, 1_001_001]);
  });
});

describe('Producer and seq', () => {
  /** A real client that answers SendMessageBatch locally and keeps the bodies it was given. */
  function recordingClient() {
    const client = new SQSClient({
      region: 'us-east-1',
      endpoint: 'http://127.0.0.1:9',
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    });
    const bodies: string[] = [];
    client.middlewareStack.add(
      (_next, context) => async (args) => {
        const input = (args.input ?? {}) as { Entries?: { Id: string; MessageBody: string }[] };
        if (context.commandName !== SendMessageBatchCommand.name) throw new Error('unexpected command');
        for (const e of input.Entries ?? []) bodies.push(e.MessageBody);
        return {
          output: {
            Successful: (input.Entries ?? []).map((e) => ({ Id: e.Id, MessageId: `m-${e.Id}` })),
            Failed: [],
            $metadata: {},
          },
          response: {},
        } as never;
      },
      { step: 'initialize' },
    );
    return { client, bodies };
  }

  it('stamps writes without seq from its source, in send order, and keeps an explicit one', async () => {
    const { client, bodies } = recordingClient();
    let next = 100;
    const producer = new Producer({
      queueUrl: 'http://127.0.0.1:9/000000000000/q',
      client,
      nextSeq: () => next++,
    });
    await producer.sendMany([
      { tenant: 'acme', resource: 'orders', op: 'upsert', id: 'o-1', data: { a: 1 } },
      { tenant: 'acme', resource: 'orders', op: 'update', id: 'o-1', data: { a: 2 }, seq: 7 },
      { tenant: 'acme', resource: 'orders', op: 'delete', id: 'o-1' },
    ]);
    expect(bodies.map((b) => (JSON.parse(b) as { seq: number }).seq)).toEqual([100, 7, 101]);
    client.destroy();
  });

  it('uses the process-wide monotonic source by default', async () => {
    const { client, bodies } = recordingClient();
    const producer = new Producer({ queueUrl: 'http://127.0.0.1:9/000000000000/q', client });
    const before = Date.now() * 1000;
    await producer.send({ tenant: 'acme', resource: 'orders', op: 'upsert', id: 'o-1', data: {} });
    await new Producer({ queueUrl: 'http://127.0.0.1:9/000000000000/q', client }).send({
      tenant: 'acme',
      resource: 'orders',
      op: 'upsert',
      id: 'o-1',
      data: {},
    });
    const [first, second] = bodies.map((b) => (JSON.parse(b) as { seq: number }).seq);
    expect(first).toBeGreaterThanOrEqual(before);
    expect(second).toBeGreaterThan(first!);
    client.destroy();
  });
});
