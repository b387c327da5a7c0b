// An in-memory SQS for the `dlq` command tests: queues with visibility on an injected clock, the calls the
// commands make, and a way to refuse or lose sends. Every call is logged for assertions.
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  GetQueueUrlCommand,
  type Message,
  type MessageAttributeValue,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  type SendMessageBatchRequestEntry,
} from '@aws-sdk/client-sqs';
import type { Clock } from '../../../../lib/cli/dlq/clock.js';

/**
 * A clock whose foreground sleeps (no signal: pacing) pass at once, moving time on, and whose background
 * sleeps (with a signal: visibility renewals) fire when time passes their due time.
 */
export class FakeClock implements Clock {
  readonly sleeps: number[] = [];
  readonly #timers: { due: number; fire: () => void }[] = [];

  constructor(public time = 1_800_000_000_000) {}

  now(): number {
    return this.time;
  }

  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal === undefined) {
      this.sleeps.push(ms);
      await this.advance(ms);
      return;
    }
    await new Promise<void>((resolve, reject) => {
      if (signal.aborted) reject(new Error('aborted'));
      const timer = { due: this.time + ms, fire: resolve };
      this.#timers.push(timer);
      signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
    });
  }

  /** Moves time on by `ms`, firing (and letting run) every background sleep due by then. */
  async advance(ms: number): Promise<void> {
    this.time += ms;
    for (const timer of this.#timers.splice(0)) {
      if (timer.due <= this.time) timer.fire();
      else this.#timers.push(timer);
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
}

interface Stored {
  readonly message: Message;
  hiddenUntil: number;
  receives: number;
}

export const ACCOUNT = '000000000000';
export const queueUrl = (name: string) => `https://sqs.us-east-1.amazonaws.com/${ACCOUNT}/${name}`;
export const queueArn = (name: string) => `arn:aws:sqs:us-east-1:${ACCOUNT}:${name}`;
export const str = (value: string): MessageAttributeValue => ({ DataType: 'String', StringValue: value });

/** What a SendMessageBatch entry's fate is: taken, listed in Failed, or listed nowhere. */
export type SendFate = 'ok' | 'failed' | 'unlisted';

export class FakeSqs {
  readonly queues = new Map<string, Stored[]>();
  readonly calls: { name: string; input: Record<string, unknown> }[] = [];
  /** Decides each sent entry's fate. */
  fateOf: (entry: SendMessageBatchRequestEntry, queueUrl: string) => SendFate = () => 'ok';
  /** Fake seconds each ReceiveMessage takes (a slow scan). */
  receiveTakesMs = 0;
  /** Make SendMessageBatch throw this. */
  sendError: Error | undefined;
  /** Message ids whose DeleteMessageBatch entry fails. */
  failDeletes = new Set<string>();
  #ids = 0;

  constructor(readonly clock: FakeClock) {}

  /** Puts a letter in `queue` (by name), as SQS would hold it. */
  add(
    queue: string,
    id: string,
    body: string,
    attributes: Record<string, MessageAttributeValue> = {},
    system: Record<string, string> = {},
  ): void {
    const list = this.queues.get(queueUrl(queue)) ?? [];
    list.push({
      message: { MessageId: id, Body: body, MessageAttributes: attributes, Attributes: system },
      hiddenUntil: 0,
      receives: 0,
    });
    this.queues.set(queueUrl(queue), list);
  }

  messages(queue: string): Message[] {
    return (this.queues.get(queueUrl(queue)) ?? []).map((s) => s.message);
  }

  bodies(queue: string): string[] {
    return this.messages(queue).map((m) => m.Body ?? '');
  }

  receivesOf(queue: string): number[] {
    return (this.queues.get(queueUrl(queue)) ?? []).map((s) => s.receives);
  }

  callsOf(name: string): Record<string, unknown>[] {
    return this.calls.filter((c) => c.name === name).map((c) => c.input);
  }

  async send(command: { input: object }): Promise<unknown> {
    const input = command.input as Record<string, unknown>;
    this.calls.push({ name: command.constructor.name, input });
    if (command instanceof ReceiveMessageCommand) return this.#receive(command.input);
    if (command instanceof SendMessageBatchCommand) {
      if (this.sendError !== undefined) throw this.sendError;
      return this.#sendBatch(command.input.QueueUrl ?? '', command.input.Entries ?? []);
    }
    if (command instanceof DeleteMessageBatchCommand) {
      const list = this.queues.get(command.input.QueueUrl ?? '') ?? [];
      const Failed: { Id: string }[] = [];
      const handles = new Set<string | undefined>();
      for (const e of command.input.Entries ?? []) {
        const target = list.find((st) => st.message.ReceiptHandle === e.ReceiptHandle);
        if (target !== undefined && this.failDeletes.has(target.message.MessageId ?? ''))
          Failed.push({ Id: e.Id ?? '' });
        else handles.add(e.ReceiptHandle);
      }
      this.queues.set(
        command.input.QueueUrl ?? '',
        list.filter((st) => !handles.has(st.message.ReceiptHandle)),
      );
      return { Successful: [], Failed };
    }
    if (command instanceof ChangeMessageVisibilityBatchCommand) {
      for (const e of command.input.Entries ?? []) {
        for (const s of this.queues.get(command.input.QueueUrl ?? '') ?? [])
          if (s.message.ReceiptHandle === e.ReceiptHandle)
            s.hiddenUntil = this.clock.now() + (e.VisibilityTimeout ?? 0) * 1000;
      }
      return { Successful: [], Failed: [] };
    }
    if (command instanceof GetQueueUrlCommand) {
      const url = `https://sqs.us-east-1.amazonaws.com/${command.input.QueueOwnerAWSAccountId}/${command.input.QueueName}`;
      if (!this.queues.has(url))
        throw Object.assign(new Error('no such queue'), { name: 'QueueDoesNotExist' });
      return { QueueUrl: url };
    }
    throw new Error(`unexpected command ${command.constructor.name}`);
  }

  async #receive(input: ReceiveMessageCommand['input']): Promise<unknown> {
    if (this.receiveTakesMs > 0) await this.clock.advance(this.receiveTakesMs);
    const out: Message[] = [];
    for (const s of this.queues.get(input.QueueUrl ?? '') ?? []) {
      if (s.hiddenUntil > this.clock.now() || out.length === (input.MaxNumberOfMessages ?? 1)) continue;
      s.hiddenUntil = this.clock.now() + (input.VisibilityTimeout ?? 30) * 1000;
      s.receives++;
      const handle = `rh-${s.message.MessageId}-${s.receives}`;
      (s.message as { ReceiptHandle?: string }).ReceiptHandle = handle;
      out.push({ ...s.message });
    }
    return { Messages: out };
  }

  #sendBatch(url: string, entries: SendMessageBatchRequestEntry[]): unknown {
    const Successful: { Id: string }[] = [];
    const Failed: { Id: string; Code: string; Message: string; SenderFault: boolean }[] = [];
    for (const e of entries) {
      const fate = this.fateOf(e, url);
      if (fate === 'failed')
        Failed.push({ Id: e.Id ?? '', Code: 'Refused', Message: 'no', SenderFault: true });
      if (fate !== 'ok') continue;
      const list = this.queues.get(url) ?? [];
      list.push({
        message: {
          MessageId: `sent-${++this.#ids}`,
          Body: e.MessageBody,
          MessageAttributes: e.MessageAttributes ?? {},
          Attributes: {
            SentTimestamp: String(this.clock.now()),
            ...(e.MessageGroupId === undefined ? {} : { MessageGroupId: e.MessageGroupId }),
            ...(e.MessageDeduplicationId === undefined
              ? {}
              : { MessageDeduplicationId: e.MessageDeduplicationId }),
          },
        },
        hiddenUntil: 0,
        receives: 0,
      });
      this.queues.set(url, list);
      Successful.push({ Id: e.Id ?? '' });
    }
    return { Successful, Failed };
  }

  /** The command released its client. */
  destroyed = false;

  destroy(): void {
    this.destroyed = true;
  }
}
