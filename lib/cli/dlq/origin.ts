import type { Message } from '@aws-sdk/client-sqs';
import { DEFERRAL_ATTRIBUTES } from '../../ingest/handler/settle/deferral-port.js';

/**
 * Message attribute of a letter the function wrote (lib/ingest/handler/settle/dead-letter-queue.ts): the ARN of the
 * queue the refused message came from. A message SQS moved carries the same as its
 * `DeadLetterQueueSourceArn` system attribute.
 */
export const SOURCE_QUEUE_ATTRIBUTE = 'sourceQueueArn';

/** Where a letter's write comes from, whatever copies and letters it went through since. */
export interface LetterOrigin {
  /** The id of the message the producer sent (a message-keyed insert derives its id from it). */
  readonly id: string;
  /** When the producer sent it (epoch ms): the stand-in `seq` of a write without one. */
  readonly sentAt?: number;
  /** The ARN of the queue the letter came through (its producer's), when known. */
  readonly sourceArn?: string;
}

/** A string attribute's value; an empty one counts as absent. */
function text(m: Message, name: string): string | undefined {
  const value = m.MessageAttributes?.[name]?.StringValue;
  return value === '' ? undefined : value;
}

/** Epoch milliseconds from an attribute's text, when it is a positive integer (`Number(undefined)` is NaN). */
function epochMs(value: string | undefined): number | undefined {
  const n = Number(value);
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

/** Whether the function wrote this letter (it carries a `reason`), rather than SQS moving the message. */
export function isHandlerLetter(m: Message): boolean {
  return m.MessageAttributes?.reason !== undefined;
}

/**
 * The origin of a letter. A message SQS moved is the producer's own (its id, `SentTimestamp` and
 * `DeadLetterQueueSourceArn`) unless it is itself a copy, whose origin attributes name the original; a
 * letter the function wrote names its message in `sourceMessageId`, `s3-ingest-origin-sent` and
 * `sourceQueueArn`.
 */
export function originOf(m: Message): LetterOrigin {
  const handler = isHandlerLetter(m);
  const id =
    text(m, DEFERRAL_ATTRIBUTES.origin) ??
    (handler ? text(m, 'sourceMessageId') : undefined) ??
    m.MessageId ??
    '';
  const sentAt =
    epochMs(text(m, DEFERRAL_ATTRIBUTES.originSent)) ??
    (handler ? undefined : epochMs(m.Attributes?.SentTimestamp));
  const sourceArn =
    m.Attributes?.DeadLetterQueueSourceArn ?? (handler ? text(m, SOURCE_QUEUE_ATTRIBUTE) : undefined);
  return {
    id,
    ...(sentAt === undefined ? {} : { sentAt }),
    ...(sourceArn === undefined ? {} : { sourceArn }),
  };
}
