import type { SQSRecord } from 'aws-lambda';

/** The message attributes a deferred copy carries (the copy is a new SQS message: new id, receive count 1). */
export const DEFERRAL_ATTRIBUTES = {
  /**
   * The SQS `messageId` of the message it stands for: its data identity stays the original's (a
   * message-keyed insert derives its record id from it, and sequenced writes break `seq` ties with it).
   */
  origin: 's3-ingest-origin',
  /**
   * Its origin's `SentTimestamp` (epoch ms), the stand-in `seq` of a message without one, so a copy orders
   * against other writes as its origin did.
   */
  originSent: 's3-ingest-origin-sent',
  /** How many times the message has been deferred so far. */
  deferrals: 's3-ingest-deferrals',
} as const;

/** One record to put back in its source queue as a new message, visible after `delaySeconds`. */
export interface Deferral {
  /** The record as delivered: its body, attributes and source queue (`eventSourceARN`) are re-sent. */
  readonly record: SQSRecord;
  /** 0..900 (SQS `DelaySeconds`). */
  readonly delaySeconds: number;
}

/**
 * Where records that did not get their turn wait (`SqsDeferrals` in Lambda: `SendMessageBatch` to the
 * record's own queue). A deferred record is acknowledged: its copy carries the write, with the deferral
 * count and its origin's message id as attributes. Resolves the message ids that were NOT deferred (those
 * are redelivered, never acknowledged); may reject as a whole (none deferred).
 */
export interface DeferralPort {
  /**
   * Whether the port could ever take `record` (`SqsDeferrals`: not one from a FIFO queue or whose copy
   * would have more than 10 attributes). A tenant with a record it could not take waits for its permits
   * until the cutoff, as one that cannot be deferred, rather than giving up its turn after `DEFERRAL_POLICY.turnWaitMs`
   * for a copy that is then refused. Absent: every record.
   */
  takes?(record: SQSRecord): boolean;
  defer(deferrals: readonly Deferral[], options: { signal: AbortSignal }): Promise<ReadonlySet<string>>;
}

/** The message id a record's data is keyed by: its origin's when it is a deferred copy, else its own. */
export function originOf(record: Pick<SQSRecord, 'messageId' | 'messageAttributes'>): string {
  const origin = record.messageAttributes?.[DEFERRAL_ATTRIBUTES.origin]?.stringValue;
  return typeof origin === 'string' && origin !== '' ? origin : record.messageId;
}

/** The `SentTimestamp` a record's data is ordered by: its origin's when it is a deferred copy, else its own. */
export function originSentOf(
  record: Pick<SQSRecord, 'attributes' | 'messageAttributes'>,
): string | undefined {
  const sent = record.messageAttributes?.[DEFERRAL_ATTRIBUTES.originSent]?.stringValue;
  return typeof sent === 'string' && sent !== '' ? sent : record.attributes?.SentTimestamp;
}

/** How many times the record was deferred before this delivery (0 for a producer's message). */
export function deferralsOf(record: Pick<SQSRecord, 'messageAttributes'>): number {
  const n = Number(record.messageAttributes?.[DEFERRAL_ATTRIBUTES.deferrals]?.stringValue);
  return Number.isInteger(n) && n > 0 ? n : 0;
}
