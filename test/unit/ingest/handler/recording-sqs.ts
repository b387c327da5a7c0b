// A fake SQSClient for SendMessageBatch: records every request (entries, queue, signal) and answers as the
// test says. Shared by the DeadLetterQueue and SqsDeferrals tests (both send through send-message-batches.ts).
import type {
  SendMessageBatchCommand,
  SendMessageBatchRequestEntry,
  SendMessageBatchResult,
  SQSClient,
} from '@aws-sdk/client-sqs';

/** SQS's answer to request number `call` (0-based): a result, or an Error the request rejects with. */
export type Answer = (
  entries: SendMessageBatchRequestEntry[],
  call: number,
  signal?: AbortSignal,
) => SendMessageBatchResult | Error | Promise<SendMessageBatchResult>;

/** Every entry Successful. */
export const allSent: Answer = (entries) => ({
  Successful: entries.map((e) => ({ Id: e.Id! })) as never,
  Failed: [],
});

export interface RecordedRequest {
  readonly entries: SendMessageBatchRequestEntry[];
  readonly queueUrl?: string;
  readonly signal?: AbortSignal;
}

/** An SQS client that records each SendMessageBatch and answers with `answer` (default: all sent). */
export function recordingClient(answer: Answer = allSent): { client: SQSClient; calls: RecordedRequest[] } {
  const calls: RecordedRequest[] = [];
  const client = {
    send: async (command: SendMessageBatchCommand, options?: { abortSignal?: AbortSignal }) => {
      const entries = command.input.Entries ?? [];
      calls.push({ entries, queueUrl: command.input.QueueUrl, signal: options?.abortSignal });
      const out = await answer(entries, calls.length - 1, options?.abortSignal);
      if (out instanceof Error) throw out;
      return out;
    },
  } as unknown as SQSClient;
  return { client, calls };
}

/** What SQS counts against its 256 KiB: bodies plus attribute names, types and values (binary in bytes). */
export function batchBytes(entries: readonly SendMessageBatchRequestEntry[]): number {
  let bytes = 0;
  for (const e of entries) {
    bytes += Buffer.byteLength(e.MessageBody ?? '');
    for (const [name, v] of Object.entries(e.MessageAttributes ?? {}))
      bytes +=
        Buffer.byteLength(name) +
        Buffer.byteLength(v.DataType ?? '') +
        Buffer.byteLength(v.StringValue ?? '') +
        (v.BinaryValue?.byteLength ?? 0);
  }
  return bytes;
}
