import type { SQSRecord } from 'aws-lambda';

/**
 * The `MessageGroupId` of a record from a FIFO queue (its ARN ends in `.fifo`); `undefined` otherwise.
 * Standard queues may carry a group id too (fair queues), but promise no order within it: holding their
 * messages back would only slow them, and would let one sender's group stall another's.
 */
export function messageGroupOf(record: SQSRecord): string | undefined {
  if (typeof record.eventSourceARN !== 'string' || !record.eventSourceARN.endsWith('.fifo')) return undefined;
  const group = (record.attributes as { MessageGroupId?: unknown } | undefined)?.MessageGroupId;
  return typeof group === 'string' && group !== '' ? group : undefined;
}
