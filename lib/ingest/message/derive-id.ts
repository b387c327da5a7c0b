import { createHash } from 'node:crypto';

/**
 * The id of an `insert` that names none. Derived, never random, so a redelivered message writes the same
 * object (at-least-once delivery, idempotent effect):
 * - from the idempotency `key` when there is one: `k-` + the first 32 hex digits (128 bits) of SHA-256(key),
 *   so the same key inserts the same record even when the producer sent it twice as two SQS messages;
 * - else from the SQS `messageId`: `m-` + the first 32 hex digits of SHA-256(messageId).
 * Both forms match the id pattern (`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`).
 */
export function deriveInsertId(source: { key?: string | undefined; messageId: string }): string {
  return source.key === undefined ? `m-${sha256Hex(source.messageId, 32)}` : `k-${sha256Hex(source.key, 32)}`;
}

export function sha256Hex(text: string, digits = 64): string {
  return createHash('sha256').update(text, 'utf8').digest('hex').slice(0, digits);
}
