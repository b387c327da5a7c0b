// The rows of the fault matrix: every AWS call the ingestion handler makes, and how to recognise it on the
// wire. The DynamoDB rows tell the semaphore's calls apart by their update expressions
// (lib/semaphore/shard-table.ts); a cell also asserts its call was faulted at least once, so a change of
// those expressions fails the matrix loudly instead of emptying it.
import type { AwsCall, AwsService } from '../../../lib/local/faults/aws-call.js';
import { FAULT_KINDS, type FaultKind } from '../../../lib/local/faults/fault-proxy.js';

export interface MatrixCall {
  /** Row label, e.g. `dynamodb acquire`. */
  readonly name: string;
  readonly service: AwsService;
  readonly match: (call: AwsCall) => boolean;
}

function updateExpression(call: AwsCall): string {
  try {
    const input = JSON.parse(call.body) as { UpdateExpression?: unknown };
    return typeof input.UpdateExpression === 'string' ? input.UpdateExpression : '';
  } catch {
    return '';
  }
}

export const MATRIX_CALLS: readonly MatrixCall[] = [
  { name: 's3 get', service: 's3', match: (c) => c.operation === 'GetObject' },
  { name: 's3 put', service: 's3', match: (c) => c.operation === 'PutObject' },
  { name: 's3 delete', service: 's3', match: (c) => c.operation === 'DeleteObject' },
  {
    // A take: adds the holder entry and its permits to `used`.
    name: 'dynamodb acquire',
    service: 'dynamodb',
    match: (c) => c.operation === 'UpdateItem' && /#used \+ /.test(updateExpression(c)),
  },
  {
    // A give-back: removes the lease's own holder entry (release, or an aborted acquire's give-back).
    name: 'dynamodb release',
    service: 'dynamodb',
    match: (c) => c.operation === 'UpdateItem' && /^REMOVE #holders\.#lease\b/.test(updateExpression(c)),
  },
  { name: 'dynamodb survey', service: 'dynamodb', match: (c) => c.operation === 'Query' },
  { name: 'sqs dead-letter send', service: 'sqs', match: (c) => c.operation === 'SendMessageBatch' },
];

export { FAULT_KINDS, type FaultKind };

/**
 * When the fault fires:
 * - `first-round`: every matching call of the first invocation (a service down for one invocation);
 * - `once`: the first matching call only (absorbed by a retry, or redelivered);
 * - `flaky`: half of the matching calls, seeded, in the first three invocations.
 */
export type FaultSchedule = 'first-round' | 'once' | 'flaky';

export interface MatrixCell {
  readonly call: MatrixCall;
  readonly fault: FaultKind;
}

export const MATRIX_CELLS: readonly MatrixCell[] = MATRIX_CALLS.flatMap((call) =>
  FAULT_KINDS.map((fault) => ({ call, fault })),
);

export const cellName = (cell: MatrixCell): string => `${cell.call.name} x ${cell.fault}`;
