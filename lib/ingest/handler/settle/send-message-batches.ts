import {
  type MessageAttributeValue,
  SendMessageBatchCommand,
  type SendMessageBatchRequestEntry,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { SQS_LIMITS } from '../../../aws/sqs-limits.js';

/** A message attribute as SQS takes it: always with its type (SQS refuses one without). */
export type OutgoingAttribute = MessageAttributeValue & { readonly DataType: string };

/** One message to send, under the key its caller reports it by (a source message id). */
export interface OutgoingMessage {
  readonly key: string;
  /** The entry without its `Id` (its position in its batch, set when batches are formed). */
  readonly entry: Omit<SendMessageBatchRequestEntry, 'Id' | 'MessageBody' | 'MessageAttributes'> & {
    readonly MessageBody: string;
    readonly MessageAttributes?: Readonly<Record<string, OutgoingAttribute>>;
  };
}

/**
 * The bytes one SendMessageBatch may carry, as `messageBytes` counts them: SQS's 256 KiB, less 6 KiB for
 * what that count leaves out.
 */
const batchBytes = SQS_LIMITS.classicPayloadBytes - 6 * 1024;

/** What SQS counts against its size limits: the body plus each attribute's name, type and value. */
export function messageBytes(
  body: string,
  attributes: Readonly<Record<string, OutgoingAttribute>> = {},
): number {
  let bytes = Buffer.byteLength(body);
  for (const [name, value] of Object.entries(attributes)) {
    bytes += Buffer.byteLength(name) + Buffer.byteLength(value.DataType);
    if (value.StringValue !== undefined) bytes += Buffer.byteLength(value.StringValue);
    if (value.BinaryValue !== undefined) bytes += value.BinaryValue.byteLength;
  }
  return bytes;
}

/**
 * Consecutive runs of `messages` of at most `SQS_LIMITS.batchEntries` entries and `batchBytes`, in order. A
 * message larger than a whole batch goes alone (SQS then refuses it, or not), never after an empty batch.
 */
export function packBatches(messages: readonly OutgoingMessage[]): OutgoingMessage[][] {
  const batches: OutgoingMessage[][] = [];
  let current: OutgoingMessage[] = [];
  let bytes = 0;
  for (const message of messages) {
    const size = messageBytes(message.entry.MessageBody, message.entry.MessageAttributes);
    if (current.length === SQS_LIMITS.batchEntries || (current.length > 0 && bytes + size > batchBytes)) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(message);
    bytes += size;
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

/**
 * Sends `messages` to `queueUrl` in `SendMessageBatch` calls (`packBatches`, concurrently), each request
 * carrying `signal`. Resolves to the keys of the messages SQS did NOT confirm: listed in `Failed`, in
 * neither list, or in a request that failed or was aborted (one not started once `signal` aborted). Never
 * rejects.
 */
export async function sendMessageBatches(
  client: SQSClient,
  queueUrl: string,
  messages: readonly OutgoingMessage[],
  signal?: AbortSignal,
): Promise<Set<string>> {
  const failed = new Set<string>();
  await Promise.all(
    packBatches(messages).map(async (batch) => {
      try {
        if (signal?.aborted === true) throw signal.reason;
        const out = await client.send(
          new SendMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: batch.map((m, i) => ({ ...m.entry, Id: String(i) })),
          }),
          // A stalled SQS must not hold the invocation: its messages are then reported as not sent.
          { abortSignal: signal },
        );
        // Only what SQS lists as Successful was sent: an entry it lists in Failed, or not at all, is
        // reported, so its source message is redelivered rather than acknowledged with no copy anywhere.
        // Stryker disable next-line OptionalChaining: without it an answer lacking the list throws into the catch, which reports the same batch as not sent
        const sent = new Set(out.Successful?.map((entry) => entry.Id));
        batch.forEach(({ key }, i) => {
          if (!sent.has(String(i))) failed.add(key);
        });
      } catch {
        for (const { key } of batch) failed.add(key);
      }
    }),
  );
  return failed;
}
