// The rows of the fault matrix: every AWS call the ingestion handler makes, how to recognise it on the
// wire, and what a run must arrange for the call to happen at all. The DynamoDB rows tell the semaphore's
// calls apart by their update expressions (lib/semaphore/shard-table.ts for the static shards,
// adaptive-shard-table.ts for the adaptive ones of tenant prefixes) and the rate schedule's by its key
// (lib/semaphore/budget-item.ts), the SQS rows a deferred copy from a
// dead letter by the copy's deferral-count attribute; a cell also asserts its call was faulted at least
// once, so a change of those expressions or attributes fails the matrix loudly instead of emptying it.
import { isHiddenJson } from '../../../lib/db/sequenced-state.js';
import type { FleetCap } from '../../../lib/ingest/config.js';
import { DEFERRALS_ATTRIBUTE } from '../../../lib/ingest/handler/settle/deferral-port.js';
import type { AwsCall, AwsService } from '../../../lib/local/faults/aws-call.js';
import { FAULT_KINDS, type FaultKind } from '../../../lib/local/faults/fault-proxy.js';

/**
 * What a run arranges so that the cell's call happens:
 * - `plain`: nothing (the batch alone makes the call);
 * - `slow-prefix`: every S3 request to the tenant's prefix answers `SLOW_PREFIX_DELAY_MS` late, so the
 *   lease's writes measure a slot time above the latency its grant stands for and the handler resizes it
 *   (`LeaseResize`, after 8 writes);
 * - `prefix-held`: another holder takes every permit of the tenant's prefix semaphore (with the rate
 *   engine, books its schedule's slots past the tenant's latest start) until the cell's fault has fired
 *   (`flaky`: for its three invocations), so the tenant's turn does not come and its records are deferred
 *   (copies sent to their queue).
 */
export type MatrixScenario = 'plain' | 'slow-prefix' | 'prefix-held';

/**
 * How late the `slow-prefix` scenario answers each S3 request of the tenant: above the 150 ms a new
 * prefix's first lease stands for (100 ms assumed x 1.5 slack, `FIRST_LEASE_LATENCY_MS`), so even a write
 * that is one PUT is slower than its grant, and short enough that the batch's writes still end before the
 * cutoff.
 */
export const SLOW_PREFIX_DELAY_MS = 160;

export interface MatrixCall {
  /** Row label, e.g. `dynamodb acquire`. */
  readonly name: string;
  readonly service: AwsService;
  readonly match: (call: AwsCall) => boolean;
  /** @default 'plain' */
  readonly scenario?: MatrixScenario;
  /**
   * Fewest records a batch needs for the call to happen (runs ask for more, never fewer).
   * @default 0
   */
  readonly minRecords?: number;
  /**
   * Whether every permit must be back in the table after the last invocation: true where the faulted call
   * is not one whose failure is known to leave a lease to expire by itself (a lost take, a failed release).
   * @default false
   */
  readonly givesBackEverything?: boolean;
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

/** A `SendMessageBatch` of deferred copies: its entries carry the deferral count (lib/ingest/handler/settle/deferral-queue.ts). */
function sendsDeferredCopies(call: AwsCall): boolean {
  if (call.operation !== 'SendMessageBatch') return false;
  try {
    const input = JSON.parse(call.body) as { Entries?: { MessageAttributes?: Record<string, unknown> }[] };
    return (input.Entries ?? []).some(
      (entry) => entry.MessageAttributes?.[DEFERRALS_ATTRIBUTE] !== undefined,
    );
  } catch {
    return false;
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
  {
    // A mid-lease resize of an adaptive shard: moves its capacity and the lease's holder entry to `:to`.
    name: 'dynamodb lease resize',
    service: 'dynamodb',
    match: (c) =>
      c.operation === 'UpdateItem' &&
      /^SET #capacity = #capacity \+ :delta\b.*#holders\.#lease\.n = :to\b/.test(updateExpression(c)),
    scenario: 'slow-prefix',
    // A lease is resized after `RESIZE_AFTER_WRITES` (8) S3 writes; a record's chain can end in one PUT.
    minRecords: 10,
    // A resize that failed, or landed unseen, still ends in a release of whatever the entry holds.
    givesBackEverything: true,
  },
  { name: 'dynamodb survey', service: 'dynamodb', match: (c) => c.operation === 'Query' },
  {
    name: 'sqs dead-letter send',
    service: 'sqs',
    match: (c) => c.operation === 'SendMessageBatch' && !sendsDeferredCopies(c),
  },
  {
    // Copies of the records whose tenant did not get its turn, sent to their own queue.
    name: 'sqs deferral send',
    service: 'sqs',
    match: sendsDeferredCopies,
    scenario: 'prefix-held',
    givesBackEverything: true,
  },
];

/** A request to the rate budget's item (`pk = rate#...`, lib/semaphore/budget-item.ts). */
function onBudgetItem(call: AwsCall): boolean {
  try {
    const input = JSON.parse(call.body) as { Key?: { pk?: { S?: unknown } } };
    const pk = input.Key?.pk?.S;
    return typeof pk === 'string' && pk.startsWith('rate#');
  } catch {
    return false;
  }
}

/**
 * The rate engine's calls (`FLEET_CAP=rate`, docs/fleet-cap.md): a booking is one strongly consistent read
 * and one conditional write of the prefix's schedule item; a report writes only when the law moves the rate
 * (the same conditional write), so nothing is released and nothing is held.
 */
export const RATE_BUDGET_CALLS: readonly MatrixCall[] = [
  {
    name: 'dynamodb budget read',
    service: 'dynamodb',
    match: (c) => c.operation === 'GetItem' && onBudgetItem(c),
  },
  {
    // Moves the schedule's first free slot past the booked slots (a step moves the rate with it).
    name: 'dynamodb rate book',
    service: 'dynamodb',
    match: (c) => c.operation === 'UpdateItem' && onBudgetItem(c),
  },
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
  /** How late a `delay` fault forwards the call, ms. @default DEFAULT_DELAY_MS (200) */
  readonly delayMs?: number;
  /** The handler's fleet cap (`FLEET_CAP`). @default 'permits' */
  readonly fleetCap?: FleetCap;
}

export const MATRIX_CELLS: readonly MatrixCell[] = MATRIX_CALLS.flatMap((call) =>
  FAULT_KINDS.map((fault) => ({ call, fault })),
);

const callNamed = (name: string): MatrixCall => MATRIX_CALLS.find((call) => call.name === name)!;

/**
 * How late the late booking lands: more than the slack of the batch's booking (24 slots at 20 writes/s for
 * its 12 PUTs: 0.6 s), so a holder that wrote in slots already passed would write past its booking.
 */
export const LATE_BOOKING_MS = 800;

/**
 * The cells run again with `FLEET_CAP=rate`, where the cap matters: every fault on the schedule's read and
 * booking write, and a booking write that lands late; S3 refusing (SlowDown) or stalling the writes the holder paces; and a schedule booked past
 * the tenant's latest start by another holder (`prefix-held`: the tenant's records are deferred) with the
 * deferral send failing or its answer lost (its throttle and stall are the SQS client's, the same under
 * either engine).
 */
export const RATE_MATRIX_CELLS: readonly MatrixCell[] = [
  ...RATE_BUDGET_CALLS.flatMap((call) =>
    FAULT_KINDS.map((fault) => ({ call, fault, fleetCap: 'rate' as const })),
  ),
  // A booking that lands late (forwarded `LATE_BOOKING_MS` late): its first slots have passed when its
  // holder learns of them, and they pass unused.
  { call: RATE_BUDGET_CALLS[1]!, fault: 'delay', delayMs: LATE_BOOKING_MS, fleetCap: 'rate' },
  ...(['throttle', 'stall'] as const).map((fault) => ({
    call: callNamed('s3 put'),
    fault,
    fleetCap: 'rate' as const,
  })),
  ...(['error', 'unknown-outcome'] as const).map((fault) => ({
    call: callNamed('sqs deferral send'),
    fault,
    fleetCap: 'rate' as const,
  })),
];

export const cellName = (cell: MatrixCell): string =>
  `${cell.fleetCap === 'rate' ? 'rate: ' : ''}${cell.call.name} x ${cell.fault}`;
