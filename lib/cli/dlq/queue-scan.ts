import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { SQS_LIMITS } from '../../aws/sqs-limits.js';
import { S3IngestError } from '../../errors/index.js';
import { type Clock, systemClock } from './clock.js';

/** SQS refused part of a batch operation on the dead-letter queue; the message names the ids. */
export class DeadLetterQueueError extends S3IngestError {
  override readonly name = 'DeadLetterQueueError';
}

export interface ScanOptions {
  /**
   * How long each received message stays hidden at a time. The scan renews it every half of this while it
   * runs (`ChangeMessageVisibility`), however long that is, and hands back every message it did not delete
   * (visibility 0) when it ends: this only bounds how long a crashed command hides messages.
   * @default 30
   */
  readonly visibilitySeconds?: number;
  /** Stop once this many messages were selected. @default no limit */
  readonly limit?: number;
  /** Which messages the scan selects; the others are handed back untouched. @default every message */
  readonly select?: (message: Message) => boolean;
  /** Time for the visibility renewals. @default the system clock */
  readonly clock?: Clock;
}

/**
 * Walks a queue without losing anything: receives every message once, hands the selected ones to
 * `onBatch`, and hands back every message that was not deleted (visibility 0) at the end, also on error.
 * Every message received stays hidden while the scan runs, renewed every half visibility timeout, so a
 * scan longer than the timeout does not meet a message again; one that comes back all the same (a
 * renewal SQS refused) is not handed to `onBatch` twice. Stops at the first receive that brings nothing new
 * (empty: a long poll of 1 s, which asks every SQS server; or only messages seen already, whose renewals
 * failed) or at `limit`.
 */
export class QueueScan {
  /** Receipt handle by message id, for every message received and not deleted. */
  readonly #held = new Map<string, string>();
  readonly #seen = new Set<string>();
  readonly #visibilitySeconds: number;
  readonly #clock: Clock;

  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
    private readonly options: ScanOptions = {},
  ) {
    this.#visibilitySeconds = options.visibilitySeconds ?? 30;
    this.#clock = options.clock ?? systemClock;
  }

  /** How many distinct messages the scan received. */
  get received(): number {
    return this.#seen.size;
  }

  /**
   * Scans the queue. `onDone` runs once the scan is over and before the remaining messages are handed
   * back, while every selected message is still hidden (e.g. to delete what was exported).
   */
  async run(
    onBatch: (selected: Message[]) => Promise<void>,
    onDone: () => Promise<void> = async () => {},
  ): Promise<void> {
    const { limit = Number.POSITIVE_INFINITY, select = () => true } = this.options;
    const renewals = new AbortController();
    const renewing = this.#renew(renewals.signal);
    let selectedCount = 0;
    try {
      while (selectedCount < limit) {
        const { Messages: received = [] } = await this.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: this.queueUrl,
            MaxNumberOfMessages: SQS_LIMITS.batchEntries,
            VisibilityTimeout: this.#visibilitySeconds,
            WaitTimeSeconds: 1,
            MessageAttributeNames: ['All'],
            MessageSystemAttributeNames: ['All'],
          }),
        );
        const selected: Message[] = [];
        let fresh = false;
        for (const m of received) {
          if (m.MessageId === undefined || m.ReceiptHandle === undefined) continue;
          this.#held.set(m.MessageId, m.ReceiptHandle);
          if (this.#seen.has(m.MessageId)) continue;
          this.#seen.add(m.MessageId);
          fresh = true;
          if (selectedCount < limit && select(m)) {
            selected.push(m);
            selectedCount++;
          }
        }
        if (!fresh) break;
        if (selected.length > 0) await onBatch(selected);
      }
      await onDone();
    } finally {
      renewals.abort();
      await renewing;
      await this.#changeVisibility(0);
      this.#held.clear();
    }
  }

  /** Deletes messages this scan received (after they were safely copied elsewhere). */
  async delete(messages: readonly Message[]): Promise<void> {
    for (let i = 0; i < messages.length; i += SQS_LIMITS.batchEntries) {
      const chunk = messages.slice(i, i + SQS_LIMITS.batchEntries);
      const out = await this.sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: chunk.map((m, index) => ({
            Id: String(index),
            ReceiptHandle: this.#held.get(m.MessageId ?? '') ?? m.ReceiptHandle,
          })),
        }),
      );
      for (const m of chunk) this.#held.delete(m.MessageId ?? '');
      if ((out.Failed ?? []).length > 0) {
        const ids = (out.Failed ?? []).map((f) => chunk[Number(f.Id)]?.MessageId);
        throw new DeadLetterQueueError(`could not delete ${ids.join(', ')} from ${this.queueUrl}`);
      }
    }
  }

  /** Renews the visibility of everything held every half timeout, until `signal` aborts. */
  async #renew(signal: AbortSignal): Promise<void> {
    const every = (this.#visibilitySeconds * 1000) / 2;
    for (;;) {
      try {
        await this.#clock.sleep(every, signal);
      } catch {
        return;
      }
      // A renewal that fails leaves the messages to come back: the scan does not hand them out twice.
      await this.#changeVisibility(this.#visibilitySeconds).catch(() => {});
    }
  }

  async #changeVisibility(seconds: number): Promise<void> {
    const handles = [...this.#held.values()];
    for (let i = 0; i < handles.length; i += SQS_LIMITS.batchEntries) {
      await this.sqs.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: handles
            .slice(i, i + SQS_LIMITS.batchEntries)
            .map((h, index) => ({ Id: String(index), ReceiptHandle: h, VisibilityTimeout: seconds })),
        }),
      );
    }
  }
}
