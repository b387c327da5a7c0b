import type { Message, MessageAttributeValue } from '@aws-sdk/client-sqs';
import { INVALID_MESSAGE_REASONS } from '../../ingest/errors.js';

/**
 * The `reason` filter value for messages without a `reason` attribute: SQS moved them after
 * `maxReceiveCount` deliveries (valid messages whose write kept failing).
 */
export const NO_REASON = 'none';

/**
 * Reasons whose message can never succeed on a retry: every contract violation, and data that fails its
 * resource's schema. `redrive` leaves them unless asked (`--include-rejected`).
 */
export const CONTRACT_REASONS: ReadonlySet<string> = new Set([
  ...INVALID_MESSAGE_REASONS,
  'schema-violation',
]);

/** The message attributes the handler adds to a letter (lib/ingest/handler/settle/dead-letter-queue.ts). */
export const DEAD_LETTER_ATTRIBUTES = [
  'reason',
  'errorName',
  'detail',
  'sourceMessageId',
  'tenant',
  'originalBodyBytes',
  'originalBodySha256',
  'sourceQueueArn',
  's3-ingest-origin-sent',
] as const;

/** One message of a dead-letter or rejected queue, as the `dlq` commands show and export it. */
export interface DeadLetterView {
  readonly messageId: string;
  /** The `reason` attribute, or `none` (moved by SQS after maxReceiveCount). */
  readonly reason: string;
  readonly errorName?: string;
  readonly detail?: string;
  readonly tenant?: string;
  /** The id of the message on the ingest queue (the handler's letters only). */
  readonly sourceMessageId?: string;
  /** When the message was first sent (ISO 8601), kept across SQS's redrive. */
  readonly sentAt?: string;
  readonly receiveCount?: number;
  /** Set when the handler had to cut the body to fit the queue: the original size in bytes. */
  readonly truncatedFromBytes?: number;
  readonly body: string;
}

function stringAttribute(m: Message, name: string): string | undefined {
  return m.MessageAttributes?.[name]?.StringValue;
}

/** Reads what the handler (or SQS's redrive) recorded on a dead-lettered message. */
export function viewOf(m: Message): DeadLetterView {
  const sent = Number(m.Attributes?.SentTimestamp);
  const receives = Number(m.Attributes?.ApproximateReceiveCount);
  const truncated = Number(stringAttribute(m, 'originalBodyBytes'));
  const optional = <K extends keyof DeadLetterView>(key: K, value: DeadLetterView[K] | undefined) =>
    value === undefined ? {} : { [key]: value };
  return {
    messageId: m.MessageId ?? '',
    reason: stringAttribute(m, 'reason') ?? NO_REASON,
    ...optional('errorName', stringAttribute(m, 'errorName')),
    ...optional('detail', stringAttribute(m, 'detail')),
    ...optional('tenant', stringAttribute(m, 'tenant')),
    ...optional('sourceMessageId', stringAttribute(m, 'sourceMessageId')),
    ...optional('sentAt', Number.isFinite(sent) ? new Date(sent).toISOString() : undefined),
    ...optional('receiveCount', Number.isFinite(receives) ? receives : undefined),
    ...optional('truncatedFromBytes', Number.isFinite(truncated) ? truncated : undefined),
    body: m.Body ?? '',
  };
}

/**
 * The message's own attributes, without the ones the handler added when it dead-lettered it. Only a letter
 * the handler wrote (it carries a `reason`) has handler attributes; a message SQS moved after
 * maxReceiveCount keeps every attribute, even one whose name the handler also uses (a producer's `tenant`).
 */
export function producerAttributes(m: Message): Record<string, MessageAttributeValue> | undefined {
  const attributes = m.MessageAttributes ?? {};
  const handlerAdded: ReadonlySet<string> = new Set(
    attributes.reason !== undefined ? DEAD_LETTER_ATTRIBUTES : [],
  );
  const kept = Object.entries(attributes).filter(([name]) => !handlerAdded.has(name));
  return kept.length === 0 ? undefined : Object.fromEntries(kept);
}

/** The first `bytes` bytes of a body, on one line, for a terminal. */
export function preview(body: string, bytes = 120): string {
  const cut = Buffer.from(body).subarray(0, bytes).toString('utf8');
  const oneLine = cut.replace(/\s+/g, ' ');
  return Buffer.byteLength(body) > bytes ? `${oneLine}...` : oneLine;
}
