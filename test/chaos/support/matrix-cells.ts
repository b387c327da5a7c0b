// The rows of the fault matrix: every AWS call the ingestion handler makes, and how to recognise it on the
// wire. The DynamoDB rows tell the semaphore's calls apart by their update expressions
// (lib/semaphore/shard-table.ts for the static shards, adaptive-shard-table.ts for the adaptive ones of
// tenant prefixes); a cell also asserts its call was faulted at least once, so a change of
// those expressions fails the matrix loudly instead of emptying it.
import { isHiddenJson } from '../../../lib/db/sequenced-state.js';
import type { AwsCall, AwsService } from '../../../lib/local/faults/aws-call.js';
import { FAULT_KINDS, type FaultKind } from '../../../lib/local/faults/fault-proxy.js';

export interface MatrixCall {
  /** Row label, e.g. `dynamodb acquire`. */
  readonly name: string;
  readonly service: AwsService;
  readonly match: (call: AwsCall) => boolean;
}

/** A PUT of a hidden object: since issue 15 a delete writes a tombstone instead of a DeleteObject. */
function putsHiddenObject(call: AwsCall): boolean {
  try {
    const stored: unknown = JSON.parse(call.body);
    return stored !== null && typeof stored === 'object' && isHiddenJson(stored as Record<string, unknown>);
  } catch {
    return false;
  }
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
  {
    // A delete's tombstone (the handler makes no DeleteObject: deletes are sequenced, lib/db/sequenced-state.ts).
    name: 's3 tombstone put',
    service: 's3',
    match: (c) => c.operation === 'PutObject' && putsHiddenObject(c),
  },
  {
    // A take: adds the holder entry and its permits to `used` (static shard) or takes them off `free`
    // (adaptive shard).
    name: 'dynamodb acquire',
    service: 'dynamodb',
    match: (c) => c.operation === 'UpdateItem' && /#used \+ |#free = #free - /.test(updateExpression(c)),
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
