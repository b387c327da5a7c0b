import { randomBytes } from 'node:crypto';

/**
 * The id of a booking or report, written to its schedule item as `by` (a writer whose answer was lost learns
 * from it whether its write landed): 96 random bits as 16 base64url characters, which keep a collision
 * among even 10^9 concurrent writers below 10^-10.
 */
export function newLeaseId(): string {
  return randomBytes(12).toString('base64url');
}
