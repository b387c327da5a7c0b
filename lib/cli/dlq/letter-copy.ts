import type { Message, MessageAttributeValue } from '@aws-sdk/client-sqs';
import { SQS_LIMITS } from '../../aws/sqs-limits.js';
import { DEFERRAL_ATTRIBUTES } from '../../ingest/handler/settle/deferral-port.js';
import { producerAttributes, viewOf } from './dead-letter.js';
import { type LetterOrigin, originOf } from './origin.js';
import { isContractRejection } from './select.js';

const DAY_MS = 86_400_000;

/** Why a letter was not sent back, as the summary counts it. */
export type SkipReason =
  | 'contract-rejection'
  | 'truncated'
  | 'unknown-source'
  | 'other-source'
  | 'unknown-origin-time'
  | 'past-tombstone-horizon'
  | 'too-many-attributes'
  | 'arrived-during-redrive'
  | 'moved-this-run';

/** What decides whether a letter may go back. */
export interface CopyPolicy {
  /** Send contract rejections too (`--include-rejected`). */
  readonly includeRejected: boolean;
  /**
   * The tombstone horizon (`retention.tombstoneDays`): a write older than this may meet a record whose
   * tombstone already expired, and would resurrect it.
   */
  readonly tombstoneDays: number;
  /** Send letters past the horizon anyway (`--past-horizon`). */
  readonly pastHorizon: boolean;
  /** Now, epoch ms. */
  readonly now: number;
}

/** A letter that may go back: its body, its producer's attributes plus its origin's, and where from. */
export interface LetterCopy {
  readonly origin: Required<LetterOrigin>;
  readonly body: string;
  readonly attributes: Record<string, MessageAttributeValue>;
  /** The letter's FIFO group (`MessageGroupId`), when it has one. */
  readonly groupId?: string;
}

export type CopyDecision =
  | { readonly kind: 'copy'; readonly copy: LetterCopy }
  | { readonly kind: 'skip'; readonly reason: SkipReason };

const skip = (reason: SkipReason): CopyDecision => ({ kind: 'skip', reason });

/**
 * Whether and how `letter` may be sent back. The copy carries the producer's own attributes plus its
 * origin's id and send time (`s3-ingest-origin`, `s3-ingest-origin-sent`), which the function orders and
 * keys it by, as for its own deferred copies: a copy never overwrites a write newer than its origin and
 * never derives a second record id. Left: contract rejections (unless asked), truncated bodies, letters
 * whose source queue or origin time is unknown, past the tombstone horizon (unless asked), or whose copy
 * would carry more than 10 attributes.
 */
export function planCopy(letter: Message, policy: CopyPolicy): CopyDecision {
  if (!policy.includeRejected && isContractRejection(letter)) return skip('contract-rejection');
  if (viewOf(letter).truncatedFromBytes !== undefined) return skip('truncated');
  const { id, sentAt, sourceArn } = originOf(letter);
  if (sourceArn === undefined) return skip('unknown-source');
  if (sentAt === undefined) return skip('unknown-origin-time');
  if (!policy.pastHorizon && policy.now - sentAt > policy.tombstoneDays * DAY_MS)
    return skip('past-tombstone-horizon');
  const attributes: Record<string, MessageAttributeValue> = {
    ...producerAttributes(letter),
    [DEFERRAL_ATTRIBUTES.origin]: { DataType: 'String', StringValue: id },
    [DEFERRAL_ATTRIBUTES.originSent]: { DataType: 'Number', StringValue: String(sentAt) },
  };
  if (Object.keys(attributes).length > SQS_LIMITS.messageAttributes) return skip('too-many-attributes');
  const groupId = letter.Attributes?.MessageGroupId;
  return {
    kind: 'copy',
    copy: {
      origin: { id, sentAt, sourceArn },
      body: letter.Body ?? '',
      attributes,
      ...(groupId === undefined ? {} : { groupId }),
    },
  };
}
