import { createHash } from 'node:crypto';
import type { SendMessageBatchRequestEntry, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { SQS_LIMITS } from '../../../aws/sqs-limits.js';
import { escapeForSqs } from '../../sqs-text.js';
import type { DeadLetterReason } from './dead-letter-reason.js';
import { DEFERRAL_ATTRIBUTES, originOf, originSentOf } from './deferral-port.js';
import { type OutgoingMessage, sendMessageBatches } from './send-message-batches.js';

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
  /**
   * The source message's `MessageGroupId` (FIFO source queues). A FIFO DLQ files the letter under it;
   * without one, under `DEAD_LETTER_FORMAT.groupId`.
   */
  readonly messageGroupId?: string;
  /** Where the refused message came from (`letterSourceOf`), for `s3-ingest dlq redrive`. */
  readonly source?: LetterSource;
}

/**
 * What a letter records of its message's origin so that a redrive sends it back as it was: to the queue it
 * came through (its producer's), keeping the data identity of the message the producer sent (a deferred
 * or redriven copy names its origin's id and send time, not its own).
 */
export interface LetterSource {
  /** `originOf(record)`: written as `sourceMessageId`. */
  readonly originId: string;
  /** `originSentOf(record)`: written as `s3-ingest-origin-sent` when it is a positive integer. */
  readonly originSentAt: string | undefined;
  /** The record's `eventSourceARN`: written as `sourceQueueArn`. */
  readonly sourceArn: string;
}

/** The `LetterSource` of a refused record. */
export function letterSourceOf(record: SQSRecord): LetterSource {
  return { originId: originOf(record), originSentAt: originSentOf(record), sourceArn: record.eventSourceARN };
}

/** The attributes a letter carries for its source, beyond `sourceMessageId`. */
function sourceAttributes(source: LetterSource | undefined): Record<string, Attribute> {
  if (source === undefined) return {};
  const sent = Number(source.originSentAt);
  return {
    sourceQueueArn: attribute(source.sourceArn),
    ...(Number.isSafeInteger(sent) && sent > 0
      ? { [DEFERRAL_ATTRIBUTES.originSent]: { DataType: 'Number', StringValue: String(sent) } }
      : {}),
  };
}

/**
 * Bounds one `send`.
 * @example { signal: deadline.signal }
 */
export interface DeadLetterSendOptions {
  /**
   * Aborting it abandons the sink's requests: letters not stored by then are reported as not stored (so
   * redelivered), never left hanging.
   * @default undefined (bounded only by the client's request timeout)
   */
  readonly signal?: AbortSignal;
}

/** How a dead letter is written to the DLQ. */
export const DEAD_LETTER_FORMAT = {
  /** FIFO DLQ: the group of letters whose source message had none (a FIFO queue needs one on every send). */
  groupId: 's3-ingest-dead-letters',
  /** The reason's detail is cut to this many characters (an attribute, not the evidence). */
  detailChars: 500,
  /**
   * A body this large could not travel to the DLQ whole once attributes are added (a source queue may take
   * up to 1 MiB, a classic DLQ 256 KiB). Such a body is kept up to this size, with its full size and
   * SHA-256 as attributes, rather than bounce between queues until the redrive policy drops the reason.
   */
  maxBodyBytes: 240 * 1024,
} as const;

function bodyOf(letter: DeadLetter): { body: string; truncatedFrom?: number } {
  if (letter.body.length === 0) return { body: '(empty body)' };
  const bytes = Buffer.byteLength(letter.body);
  if (bytes <= DEAD_LETTER_FORMAT.maxBodyBytes) return { body: letter.body };
  // Cutting inside a multi-byte character yields one U+FFFD at the end, which is fine for evidence.
  const body = Buffer.from(letter.body).subarray(0, DEAD_LETTER_FORMAT.maxBodyBytes).toString('utf8');
  return { body, truncatedFrom: bytes };
}

/**
 * A FIFO DLQ refuses sends without `MessageGroupId`, and without `MessageDeduplicationId` unless the queue
 * deduplicates by content. The dedup id derives from the source message id, so a source message
 * dead-lettered twice (redelivered after its first letter was sent) leaves one letter.
 */
function fifoFieldsOf(
  letter: DeadLetter,
): Pick<SendMessageBatchRequestEntry, 'MessageGroupId' | 'MessageDeduplicationId'> {
  const group = letter.messageGroupId;
  return {
    MessageGroupId:
      group !== undefined && SQS_LIMITS.fifoIdPattern.test(group) ? group : DEAD_LETTER_FORMAT.groupId,
    MessageDeduplicationId: createHash('sha256').update(letter.messageId).digest('hex'),
  };
}

/** The first `DEAD_LETTER_FORMAT.detailChars` UTF-16 units of `detail`, never ending inside a surrogate pair. */
function truncatedDetail(detail: string): string {
  if (detail.length <= DEAD_LETTER_FORMAT.detailChars) return detail;
  const cut = detail.slice(0, DEAD_LETTER_FORMAT.detailChars);
  return /[\ud800-\udbff]$/.test(cut) ? cut.slice(0, -1) : cut;
}

// Every string attribute is escaped: SQS refuses a whole SendMessageBatch entry that carries U+FFFE, U+FFFF,
// a control character or a lone surrogate, and `detail` quotes whatever the refused message contained.
const attribute = (value: string): Attribute => ({ DataType: 'String', StringValue: escapeForSqs(value) });

/** A message attribute as this queue sends it: always a type and a value. */
interface Attribute {
  readonly DataType: string;
  readonly StringValue: string;
}

function entryOf(letter: DeadLetter, fifo: boolean): OutgoingMessage['entry'] {
  const { body, truncatedFrom } = bodyOf(letter);
  return {
    MessageBody: body,
    ...(fifo ? fifoFieldsOf(letter) : {}),
    MessageAttributes: {
      ...(truncatedFrom === undefined
        ? {}
        : {
            originalBodyBytes: { DataType: 'Number', StringValue: String(truncatedFrom) },
            originalBodySha256: attribute(createHash('sha256').update(letter.body).digest('hex')),
          }),
      reason: attribute(letter.reason),
      errorName: attribute(letter.errorName),
      detail: attribute(truncatedDetail(letter.detail) || '-'),
      sourceMessageId: attribute(letter.source?.originId ?? letter.messageId),
      ...(letter.tenant === undefined ? {} : { tenant: attribute(letter.tenant) }),
      ...sourceAttributes(letter.source),
    },
  };
}

/**
 * Sends permanent failures to the DLQ in `SendMessageBatch` calls. Resolves to the message ids that could
 * NOT be dead-lettered: the handler reports those as batch item failures, so SQS redelivers them and its
 * redrive policy still moves them eventually. A message is acknowledged only once it is safely in the DLQ.
 */
export class DeadLetterQueue {
  /** A `.fifo` DLQ (the DLQ of a FIFO source queue must be FIFO): letters carry group and dedup ids. */
  readonly #fifo: boolean;

  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {
    this.#fifo = queueUrl.endsWith('.fifo');
  }

  async send(letters: readonly DeadLetter[], options: DeadLetterSendOptions = {}): Promise<Set<string>> {
    return sendMessageBatches(
      this.client,
      this.queueUrl,
      letters.map((letter) => ({ key: letter.messageId, entry: entryOf(letter, this.#fifo) })),
      options.signal,
    );
  }
}
