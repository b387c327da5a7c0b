import type { Message } from '@aws-sdk/client-sqs';
import { CONTRACT_REASONS, viewOf } from './dead-letter.js';

/** Selects messages by `reason` (`none` = no reason attribute), or every message when absent. */
export function byReason(reason: string | undefined): (m: Message) => boolean {
  return reason === undefined ? () => true : (m) => viewOf(m).reason === reason;
}

/** Whether the message is a contract rejection (it can never succeed on a retry). */
export function isContractRejection(m: Message): boolean {
  return CONTRACT_REASONS.has(viewOf(m).reason);
}
