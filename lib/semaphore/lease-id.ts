import { randomBytes } from 'node:crypto';

/**
 * A lease's fence: 96 random bits as 16 base64url characters. Every holder is an entry keyed by its fence
 * in a shard item, and DynamoDB bills a write by the item's size (1 WRU per started KB, before or after,
 * whichever is larger), so short ids keep a hot prefix's item, and each take and release, small
 * (docs/decisions/compact-lease-ids.md). 96 bits keep a collision among even 10^9 concurrent leases below
 * 10^-10.
 */
export function newLeaseId(): string {
  return randomBytes(12).toString('base64url');
}
