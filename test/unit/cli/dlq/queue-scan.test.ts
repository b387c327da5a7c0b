// QueueScan on an in-memory SQS and an injected clock: every message once, held hidden however long the
// scan runs, everything not deleted handed back at the end (also on error).
import type { Message, SQSClient } from '@aws-sdk/client-sqs';
import { beforeEach, describe, expect, it } from 'vitest';
import { DeadLetterQueueError, QueueScan } from '../../../../lib/cli/dlq/queue-scan.js';
import { FakeClock, FakeSqs, queueUrl } from './fake-sqs.js';

let clock: FakeClock;
let sqs: FakeSqs;
const DLQ = queueUrl('dlq');
beforeEach(() => {
  clock = new FakeClock();
  sqs = new FakeSqs(clock);
  for (let i = 0; i < 25; i++) sqs.add('dlq', `m-${i}`, `body-${i}`);
});

const scanOf = (options: ConstructorParameters<typeof QueueScan>[2] = {}) =>
  new QueueScan(sqs as unknown as SQSClient, DLQ, { clock, ...options });

const visibilityCalls = () =>
  sqs
    .callsOf('ChangeMessageVisibilityBatchCommand')
    .map((c) =>
      (c.Entries as { Id: string; VisibilityTimeout: number }[]).map((e) => [e.Id, e.VisibilityTimeout]),
    );

describe('QueueScan', () => {
  it('hands every message to onBatch once, in receives of 10, then hands them all back', async () => {
    const scan = scanOf();
    const batches: string[][] = [];
    let doneWhileHeld = -1;
    await scan.run(
      async (batch) => {
        batches.push(batch.map((m) => m.MessageId ?? ''));
      },
      async () => {
        doneWhileHeld = sqs.receivesOf('dlq').filter((n) => n === 1).length;
      },
    );
    expect(batches.map((b) => b.length)).toEqual([10, 10, 5]);
    expect(new Set(batches.flat()).size).toBe(25);
    expect(scan.received).toBe(25);
    expect(doneWhileHeld).toBe(25);
    expect(sqs.callsOf('ReceiveMessageCommand')[0]).toEqual({
      QueueUrl: DLQ,
      MaxNumberOfMessages: 10,
      VisibilityTimeout: 30,
      WaitTimeSeconds: 1,
      MessageAttributeNames: ['All'],
      MessageSystemAttributeNames: ['All'],
    });
    // Handed back in batches of 10 with visibility 0: visible again now.
    expect(visibilityCalls()).toEqual([
      Array.from({ length: 10 }, (_, i) => [String(i), 0]),
      Array.from({ length: 10 }, (_, i) => [String(i), 0]),
      Array.from({ length: 5 }, (_, i) => [String(i), 0]),
    ]);
    const again = await sqs.send(
      new (await import('@aws-sdk/client-sqs')).ReceiveMessageCommand({
        QueueUrl: DLQ,
        MaxNumberOfMessages: 10,
      }),
    );
    expect((again as { Messages: Message[] }).Messages).toHaveLength(10);
  });

  it('selects with `select` and stops at `limit` selected messages', async () => {
    const scan = scanOf({ limit: 3, select: (m) => Number(m.MessageId?.slice(2)) % 2 === 1 });
    const got: string[] = [];
    await scan.run(async (batch) => {
      got.push(...batch.map((m) => m.MessageId ?? ''));
    });
    expect(got).toEqual(['m-1', 'm-3', 'm-5']);
    expect(sqs.callsOf('ReceiveMessageCommand')).toHaveLength(1);
    const limitOne = scanOf({ limit: 1 });
    const one: string[] = [];
    await limitOne.run(async (batch) => {
      one.push(...batch.map((m) => m.MessageId ?? ''));
    });
    expect(one).toEqual(['m-0']);
  });

  it('deletes what it is told to and hands back only the rest', async () => {
    const scan = scanOf();
    await scan.run(async (batch) => {
      await scan.delete(batch.filter((m) => m.MessageId !== 'm-0'));
    });
    expect(sqs.messages('dlq').map((m) => m.MessageId)).toEqual(['m-0']);
    expect(visibilityCalls()).toEqual([[['0', 0]]]);
  });

  it('deletes in batches of 10, and calls onBatch only for receives that selected something', async () => {
    const scan = scanOf({ select: (m) => Number(m.MessageId?.slice(2)) >= 10 });
    let calls = 0;
    await scan.run(async (batch) => {
      calls++;
      await scan.delete(batch);
    });
    expect(calls).toBe(2);
    expect(sqs.callsOf('DeleteMessageBatchCommand').map((c) => (c.Entries as object[]).length)).toEqual([
      10, 5,
    ]);
    sqs = new FakeSqs(clock);
    for (let i = 0; i < 25; i++) sqs.add('dlq', `m-${i}`, `body-${i}`);
    const all = scanOf();
    const received: Message[] = [];
    await all.run(
      async (batch) => {
        received.push(...batch);
      },
      () => all.delete(received),
    );
    expect(sqs.callsOf('DeleteMessageBatchCommand').map((c) => (c.Entries as object[]).length)).toEqual([
      10, 10, 5,
    ]);
    expect(sqs.messages('dlq')).toEqual([]);
  });

  it('renews every half visibility timeout, not more often', async () => {
    sqs.receiveTakesMs = 10_000;
    await scanOf({ visibilitySeconds: 30 }).run(async () => {});
    const renewals = visibilityCalls().filter((c) => c.every(([, v]) => v === 30));
    // Receives end at 10, 20, 30 and 40 s; renewals fire at 15 and 30 s, of what was held then.
    expect(renewals.map((c) => c.length)).toEqual([10, 10, 10, 5]);
  });

  it('names the messages SQS would not delete', async () => {
    sqs.failDeletes = new Set(['m-2', 'm-4']);
    const scan = scanOf();
    const run = scan.run(async (batch) => {
      await scan.delete(batch);
    });
    await expect(run).rejects.toMatchObject({
      name: 'DeadLetterQueueError',
      message: `could not delete m-2, m-4 from ${DLQ}`,
    });
    await expect(run).rejects.toBeInstanceOf(DeadLetterQueueError);
  });

  it('hands everything back when onBatch fails', async () => {
    const scan = scanOf();
    await expect(
      scan.run(async () => {
        throw new Error('disk full');
      }),
    ).rejects.toMatchObject({ message: 'disk full' });
    expect(visibilityCalls().flat()).toHaveLength(10);
  });

  it('renews the visibility of what it holds every half timeout while a long scan runs', async () => {
    sqs.receiveTakesMs = 20_000;
    const scan = scanOf({ visibilitySeconds: 30 });
    const seen: string[] = [];
    await scan.run(async (batch) => {
      seen.push(...batch.map((m) => m.MessageId ?? ''));
    });
    // 4 receives of 20 s each; every 15 s what is held then is renewed (in batches of 10).
    expect(seen).toHaveLength(25);
    expect(sqs.receivesOf('dlq').every((n) => n === 1)).toBe(true);
    const renewals = visibilityCalls().filter((c) => c.every(([, v]) => v === 30));
    expect(renewals.map((c) => c.length)).toEqual([10, 10, 10, 10, 10, 5]);
  });

  it('without renewals a message would come back: it is then not handed out twice, and its newest handle deletes it', async () => {
    const scan = scanOf({ visibilitySeconds: 30 });
    const seen: string[] = [];
    let first: Message | undefined;
    let deleted = false;
    await scan.run(async (batch) => {
      seen.push(...batch.map((m) => m.MessageId ?? ''));
      if (first === undefined) {
        first = batch[0];
        // The renewal of m-0 is lost: it is visible again before the next receive.
        for (const stored of sqs.queues.get(DLQ) ?? [])
          if (stored.message.MessageId === 'm-0') stored.hiddenUntil = 0;
        return;
      }
      // The handle it was first received with is stale now; the scan deletes with the newest one.
      if (!deleted) await scan.delete([first]);
      deleted = true;
    });
    expect(seen.filter((id) => id === 'm-0')).toHaveLength(1);
    expect(seen).toHaveLength(25);
    expect(sqs.messages('dlq').map((m) => m.MessageId)).not.toContain('m-0');
  });

  it('skips a received message without an id or handle; when renewals fail, ends at a receive with nothing new', async () => {
    const send = sqs.send.bind(sqs);
    let receives = 0;
    sqs.receiveTakesMs = 20_000;
    sqs.send = async (command) => {
      const name = command.constructor.name;
      const entries = (command.input as { Entries?: { VisibilityTimeout?: number }[] }).Entries ?? [];
      if (name === 'ChangeMessageVisibilityBatchCommand' && entries[0]?.VisibilityTimeout === 30)
        throw new Error('throttled');
      const out = (await send(command)) as { Messages?: Message[] };
      if (name === 'ReceiveMessageCommand' && receives++ === 0 && out.Messages !== undefined) {
        out.Messages[0] = { ...out.Messages[0], ReceiptHandle: undefined };
        out.Messages[1] = { ...out.Messages[1], MessageId: undefined };
      }
      return out;
    };
    const seen: string[] = [];
    await scanOf().run(async (batch) => {
      seen.push(...batch.map((m) => m.MessageId ?? ''));
    });
    // The scan ends (a receive with nothing new: every renewal failed), having handed each message out once.
    expect(seen.slice(0, 8)).toEqual(['m-2', 'm-3', 'm-4', 'm-5', 'm-6', 'm-7', 'm-8', 'm-9']);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toHaveLength(20);
  });
});
