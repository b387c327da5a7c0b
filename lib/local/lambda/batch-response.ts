/**
 * How Lambda's SQS event source mapping reads a handler's return value when the mapping has
 * `FunctionResponseTypes: ['ReportBatchItemFailures']`
 * (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html).
 *
 * Complete success: `null`/`undefined`, `{}`, `{ batchItemFailures: null }` or `{ batchItemFailures: [] }`.
 * Complete failure: a response Lambda cannot read as an `SQSBatchResponse` (not an object, a
 * `batchItemFailures` that is not a list, an entry without a string `itemIdentifier`), an empty
 * `itemIdentifier`, or an `itemIdentifier` that names no message of the batch.
 */
export type BatchVerdict =
  | { kind: 'success' }
  | { kind: 'partial'; failedMessageIds: ReadonlySet<string> }
  | { kind: 'invalid-response'; reason: string };

export function readBatchResponse(response: unknown, batchMessageIds: ReadonlySet<string>): BatchVerdict {
  if (response === null || response === undefined) return { kind: 'success' };
  if (typeof response !== 'object' || Array.isArray(response)) {
    return {
      kind: 'invalid-response',
      reason: `response is ${Array.isArray(response) ? 'an array' : typeof response}`,
    };
  }
  const failures = (response as { batchItemFailures?: unknown }).batchItemFailures;
  if (failures === null || failures === undefined) return { kind: 'success' };
  if (!Array.isArray(failures))
    return { kind: 'invalid-response', reason: 'batchItemFailures is not a list' };
  const failed = new Set<string>();
  for (const [index, entry] of failures.entries()) {
    const id =
      typeof entry === 'object' && entry !== null
        ? (entry as { itemIdentifier?: unknown }).itemIdentifier
        : undefined;
    if (typeof id !== 'string') {
      return { kind: 'invalid-response', reason: `batchItemFailures[${index}] has no string itemIdentifier` };
    }
    if (id === '')
      return { kind: 'invalid-response', reason: `batchItemFailures[${index}].itemIdentifier is empty` };
    if (!batchMessageIds.has(id)) {
      return {
        kind: 'invalid-response',
        reason: `batchItemFailures[${index}].itemIdentifier ${id} is not in the batch`,
      };
    }
    failed.add(id);
  }
  return failed.size === 0 ? { kind: 'success' } : { kind: 'partial', failedMessageIds: failed };
}
