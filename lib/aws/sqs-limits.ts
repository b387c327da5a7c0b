/**
 * Amazon SQS's service limits that requests are packed and checked by, one line each (the SQS Developer
 * Guide's quotas). Facts about SQS, not knobs: every sender and receiver in the code uses these.
 */
export const SQS_LIMITS = {
  /** Entries per SendMessageBatch, DeleteMessageBatch and ChangeMessageVisibilityBatch; messages per ReceiveMessage. */
  batchEntries: 10,
  /** Message attributes one message may carry. */
  messageAttributes: 10,
  /** The longest `DelaySeconds` of a message (15 minutes). */
  maxDelaySeconds: 900,
  /** The longest visibility timeout (12 hours). */
  maxVisibilitySeconds: 43_200,
  /** A message's, and a whole batch request's, payload (body + attributes) on a queue with the classic 256 KiB limit. */
  classicPayloadBytes: 262_144,
  /** `MessageGroupId` and `MessageDeduplicationId`: 1..128 characters of alphanumerics and punctuation. */
  fifoIdPattern: /^[\x21-\x7e]{1,128}$/,
} as const;
