import {
  SendMessageBatchCommand,
  type SendMessageBatchRequestEntry,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { DeadLetterReason } from './dead-letter-reason.js';

/** One message to move to the DLQ: the original body, verbatim, plus why. */
export interface DeadLetter {
  readonly messageId: string;
  readonly body: string;
  readonly reason: DeadLetterReason;
  /** The error class name (`InvalidMessageError`, `ValidationError`, ...). */
  readonly errorName: string;
  /** Human-readable detail, e.g. the offending field. Truncated to fit an attribute. */
  readonly detail: string;
  readonly tenant?: string;
}

const ENTRIES_PER_BATCH = 10;
// SQS caps a whole SendMessageBatch at 256 KiB (bodies + attributes); leave room for attributes.
const BATCH_BYTES = 250 * 1024;
const DETAIL_CHARS = 500;

function entryOf(letter: DeadLetter, index: number): SendMessageBatchRequestEntry {
  const attribute = (value: string) => ({ DataType: 'String', StringValue: value });
  return {
    Id: String(index),
    MessageBody: letter.body.length === 0 ? '(empty body)' : letter.body,
    MessageAttributes: {
      reason: attribute(letter.reason),
      errorName: attribute(letter.errorName),
      detail: attribute(letter.detail.slice(0, DETAIL_CHARS) || '-'),
      sourceMessageId: attribute(letter.messageId),
      ...(letter.tenant === undefined ? {} : { tenant: attribute(letter.tenant) }),
    },
  };
}

/**
 * Sends permanent failures to the DLQ in `SendMessageBatch` calls. Resolves to the message ids that could
 * NOT be dead-lettered: the handler reports those as batch item failures, so SQS redelivers them and its
 * redrive policy still moves them eventually. A message is acknowledged only once it is safely in the DLQ.
 */
export class DeadLetterQueue {
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async send(letters: readonly DeadLetter[]): Promise<Set<string>> {
    const failed = new Set<string>();
    const batches: DeadLetter[][] = [];
    let current: DeadLetter[] = [];
    let bytes = 0;
    for (const letter of letters) {
      const size = Buffer.byteLength(letter.body) + 1024;
      if (current.length === ENTRIES_PER_BATCH || (current.length > 0 && bytes + size > BATCH_BYTES)) {
        batches.push(current);
        current = [];
        bytes = 0;
      }
      current.push(letter);
      bytes += size;
    }
    if (current.length > 0) batches.push(current);

    await Promise.all(
      batches.map(async (batch) => {
        try {
          const out = await this.client.send(
            new SendMessageBatchCommand({ QueueUrl: this.queueUrl, Entries: batch.map(entryOf) }),
          );
          for (const entry of out.Failed ?? []) {
            const letter = batch[Number(entry.Id)];
            if (letter !== undefined) failed.add(letter.messageId);
          }
        } catch {
          for (const letter of batch) failed.add(letter.messageId);
        }
      }),
    );
    return failed;
  }
}
