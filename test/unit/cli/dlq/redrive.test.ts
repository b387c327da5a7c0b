// Attack tests on `s3-ingest dlq redrive` against an in-process fake SQS (no emulator). A test here that
// FAILS on main demonstrates a defect; product code is deliberately left unfixed on this branch.
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  type Message,
  type MessageAttributeValue,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
} from '@aws-sdk/client-sqs';
import { describe, expect, it, vi } from 'vitest';

const SOURCE_ARN = 'arn:aws:sqs:us-east-1:000000000000:ingest';

interface Stored {
  message: Message;
  visible: boolean;
}

/** Two queues in memory: the DLQ scanned, and the destination that answers SendMessageBatch. */
class FakeSqs {
  readonly dlq = new Map<string, Stored>();
  readonly delivered: Message[] = [];
  /** Entries (by index in the batch) the destination lists in neither Successful nor Failed. */
  unlisted = new Set<number>();

  add(id: string, body: string, attributes: Record<string, MessageAttributeValue> = {}): void {
    this.dlq.set(id, {
      message: {
        MessageId: id,
        ReceiptHandle: `rh-${id}`,
        Body: body,
        MessageAttributes: attributes,
        Attributes: { SentTimestamp: '1000', DeadLetterQueueSourceArn: SOURCE_ARN },
      },
      visible: true,
    });
  }

  async send(command: unknown): Promise<unknown> {
    if (command instanceof ReceiveMessageCommand) {
      const out: Message[] = [];
      for (const entry of this.dlq.values()) {
        if (!entry.visible || out.length === 10) continue;
        entry.visible = false;
        out.push(entry.message);
      }
      return { Messages: out };
    }
    if (command instanceof SendMessageBatchCommand) {
      const Successful: { Id: string }[] = [];
      (command.input.Entries ?? []).forEach((e, i) => {
        if (this.unlisted.has(i)) return;
        this.delivered.push({ Body: e.MessageBody, MessageAttributes: e.MessageAttributes ?? {} });
        Successful.push({ Id: e.Id ?? '' });
      });
      return { Successful, Failed: [] };
    }
    if (command instanceof DeleteMessageBatchCommand) {
      for (const e of command.input.Entries ?? []) {
        for (const [id, entry] of this.dlq)
          if (entry.message.ReceiptHandle === e.ReceiptHandle) this.dlq.delete(id);
      }
      return { Successful: [], Failed: [] };
    }
    if (command instanceof ChangeMessageVisibilityBatchCommand) {
      for (const e of command.input.Entries ?? []) {
        for (const entry of this.dlq.values())
          if (entry.message.ReceiptHandle === e.ReceiptHandle) entry.visible = true;
      }
      return { Successful: [], Failed: [] };
    }
    throw new Error(`unexpected command ${String(command)}`);
  }

  destroy(): void {}
}

const fake = { current: new FakeSqs() };
vi.mock('../../../../lib/cli/clients.js', () => ({ sqsClientFromEnv: () => fake.current }));

const { dlqRedriveCommand } = await import('../../../../lib/cli/dlq/redrive.js');

function io() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    io: {
      stdout: { write: (t: string) => out.push(t) },
      stderr: { write: (t: string) => err.push(t) },
      env: {},
    },
    out,
    err,
  };
}

const ARGS = [
  '--dlq-url',
  'http://sqs/dlq',
  '--to',
  'http://sqs/000000000000/ingest',
  '--yes',
  '--rate',
  '1000',
  '--past-horizon',
];
const str = (value: string): MessageAttributeValue => ({ DataType: 'String', StringValue: value });

describe('dlq redrive', () => {
  it('never deletes a message the destination did not list as Successful (it would be in neither queue)', async () => {
    fake.current = new FakeSqs();
    fake.current.add('m-1', '{"v":1}');
    fake.current.add('m-2', '{"v":1,"x":2}');
    // SendMessageBatch answers with entry 1 in neither Successful nor Failed (the handler's own DLQ sink
    // treats exactly this case as "not stored").
    fake.current.unlisted = new Set([1]);
    const { io: cli } = io();
    await dlqRedriveCommand(ARGS, cli);
    const everywhere = [...fake.current.dlq.values()]
      .map((s) => s.message.Body)
      .concat(fake.current.delivered.map((m) => m.Body));
    // Today m-2 is deleted from the DLQ although it reached no queue: lost.
    expect(everywhere.sort()).toEqual(['{"v":1,"x":2}', '{"v":1}']);
  });

  it("keeps a producer's own message attributes on a message SQS moved after maxReceiveCount", async () => {
    fake.current = new FakeSqs();
    // No `reason`: SQS moved it (a valid message whose writes kept failing). `tenant` is the producer's.
    fake.current.add('m-1', '{"v":1}', { tenant: str('acme'), traceId: str('t-1') });
    const { io: cli } = io();
    await dlqRedriveCommand(ARGS, cli);
    expect(fake.current.delivered).toHaveLength(1);
    // Today `tenant` is stripped: every name the handler may add is dropped, whoever set it.
    expect(fake.current.delivered[0]!.MessageAttributes).toEqual({
      tenant: str('acme'),
      traceId: str('t-1'),
      's3-ingest-origin': str('m-1'),
      's3-ingest-origin-sent': { DataType: 'Number', StringValue: '1000' },
    });
  });

  it('leaves contract rejections without --include-rejected, and moves the rest once', async () => {
    fake.current = new FakeSqs();
    fake.current.add('r-1', 'nope', { reason: str('invalid-json') });
    fake.current.add('r-2', '{}', { reason: str('schema-violation') });
    fake.current.add('m-1', '{"v":1}');
    fake.current.add('m-2', '{"v":2}', {
      reason: str('record-not-found'),
      's3-ingest-origin-sent': { DataType: 'Number', StringValue: '900' },
    });
    const { io: cli } = io();
    await dlqRedriveCommand(ARGS, cli);
    expect(fake.current.delivered.map((m) => m.Body).sort()).toEqual(['{"v":1}', '{"v":2}']);
    expect([...fake.current.dlq.keys()].sort()).toEqual(['r-1', 'r-2']);
    expect([...fake.current.dlq.values()].every((s) => s.visible)).toBe(true);
  });
});
