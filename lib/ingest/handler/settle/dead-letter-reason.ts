import type { InvalidMessageReason } from '../../errors.js';

/**
 * Why the handler moved a message to the DLQ itself: a contract violation found while parsing, or a write
 * the store refused for good. Sent as the `reason` message attribute; permanent, never retried.
 */
export type DeadLetterReason =
  | InvalidMessageReason
  /** The record fails its resource's JSON Schema (`detail` names the field). */
  | 'schema-violation'
  /** `update` of a record that does not exist. */
  | 'record-not-found'
  /** `insert` with an explicit id that another write already holds with different content. */
  | 'record-exists'
  /** The message's tenant is not one its source queue may write (tenant-bound producers, `SOURCE_TENANTS`). */
  | 'tenant-not-allowed'
  /** The message came from a source queue bound to no tenants (`SOURCE_TENANTS` set, fail closed). */
  | 'unknown-source';
