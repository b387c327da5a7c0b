// The rows of the fault matrix: every AWS call the ingestion handler makes, how to recognise it on the
// wire, and what a run must arrange for the call to happen at all. The DynamoDB rows tell the calls on a
// prefix's schedule item apart (lib/semaphore/budget-item.ts: its creation, its read, and the conditional
// write that books slots or moves the rate), the SQS rows a deferred copy from a dead letter by the copy's
// deferral-count attribute; a cell also asserts its call was faulted at least once, so a change of those
// requests or attributes fails the matrix loudly instead of emptying it.
import { isHiddenJson } from '../../../lib/db/sequenced-state.js';
import { DEFERRAL_ATTRIBUTES } from '../../../lib/ingest/handler/settle/deferral-port.js';
import type { AwsCall, AwsService } from '../../../lib/local/faults/aws-call.js';
import { FAULT_KINDS, type FaultKind } from '../../../lib/local/faults/fault-proxy.js';

/**
 * What a run arranges so that the cell's call happens:
 * - `plain`: nothing (the batch alone makes the call);
 * - `throttled-prefix`: S3 answers SlowDown to half of the tenant's PUTs (seeded) in the first invocation,
 *   so its holder's rounds are overloaded and it steps the schedule's rate down (a step, then its report);
 * - `prefix-held`: another holder books the tenant prefix's schedule past the tenant's latest start until
 *   the cell's fault has fired (`flaky`: for its three invocations), so the tenant's turn does not come and
 *   its records are deferred (copies sent to their queue).
 */
export type MatrixScenario = 'plain' | 'throttled-prefix' | 'prefix-held';

export interface MatrixCall {
  /** Row label, e.g. `dynamodb rate book`. */
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

/** A `SendMessageBatch` of deferred copies: its entries carry the deferral count (lib/ingest/handler/settle/deferral-queue.ts). */
function sendsDeferredCopies(call: AwsCall): boolean {
  if (call.operation !== 'SendMessageBatch') return false;
  try {
    const input = JSON.parse(call.body) as { Entries?: { MessageAttributes?: Record<string, unknown> }[] };
    return (input.Entries ?? []).some(
      (entry) => entry.MessageAttributes?.[DEFERRAL_ATTRIBUTES.deferrals] !== undefined,
    );
  } catch {
    return false;
  }
}

interface ScheduleRequest {
  readonly TableName?: string;
  readonly Key?: { readonly pk?: { readonly S?: string } };
  readonly Item?: { readonly pk?: { readonly S?: string }; readonly rate?: { readonly N?: string } };
  readonly ExpressionAttributeValues?: Record<string, { readonly N?: string }>;
}

/** The request of a call on a schedule item (`pk = rate#...`, lib/semaphore/budget-item.ts), if it is one. */
function scheduleRequest(call: AwsCall): ScheduleRequest | undefined {
  try {
    const input = JSON.parse(call.body) as ScheduleRequest;
    const pk = input.Key?.pk?.S ?? input.Item?.pk?.S;
    return typeof pk === 'string' && pk.startsWith('rate#') ? input : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The rate each version of a schedule item was written with, as the requests the matchers saw said (per
 * table, item and version; the creation is version 0). Every write is conditional on the version it read
 * (`:read`), so a write books slots when it keeps the rate of that version and moves the rate otherwise (a
 * step, or a report the law moves the rate for). The handler's writes all pass the matcher while its rule is
 * active, so the version a write read was seen before it; a write whose version was not seen counts as a
 * booking.
 */
const writtenRates = new Map<string, number>();

/** Whether `call` is a write of a schedule item that moves its rate (records the rate it writes). */
function movesRate(call: AwsCall): boolean | undefined {
  const input = scheduleRequest(call);
  if (input === undefined) return undefined;
  const item = `${input.TableName ?? ''} ${input.Key?.pk?.S ?? input.Item?.pk?.S ?? ''}`;
  if (call.operation === 'PutItem') {
    writtenRates.set(`${item} 0`, Number(input.Item?.rate?.N));
    return undefined;
  }
  if (call.operation !== 'UpdateItem') return undefined;
  const values = input.ExpressionAttributeValues ?? {};
  const rate = Number(values[':rate']?.N);
  const read = writtenRates.get(`${item} ${values[':read']?.N}`);
  writtenRates.set(`${item} ${values[':next']?.N}`, rate);
  return read !== undefined && read !== rate;
}

/**
 * The rate schedule's calls (docs/fleet-cap.md): a booking is one strongly consistent read and one
 * conditional write of the prefix's schedule item (created at the ceiling by the first booking); a step or a
 * report writes only when the law moves the rate (the same conditional write), so nothing is given back and
 * nothing is held.
 */
const BUDGET_CALLS: readonly MatrixCall[] = [
  {
    // The first booking on a fresh table: the item at the ceiling, unless it exists.
    name: 'dynamodb budget create',
    service: 'dynamodb',
    match: (c) => c.operation === 'PutItem' && scheduleRequest(c) !== undefined,
  },
  {
    name: 'dynamodb budget read',
    service: 'dynamodb',
    match: (c) => c.operation === 'GetItem' && scheduleRequest(c) !== undefined,
  },
  {
    // Moves the schedule's first free slot past the booked slots, at the rate it read.
    name: 'dynamodb rate book',
    service: 'dynamodb',
    match: (c) => movesRate(c) === false,
  },
  {
    // Moves the rate: a holder's overloaded round steps it down (then reports from there).
    name: 'dynamodb rate step',
    service: 'dynamodb',
    match: (c) => movesRate(c) === true,
    scenario: 'throttled-prefix',
    // Enough writes for overloaded rounds of `MIN_ROUND_WRITES`.
    minRecords: 10,
  },
];

export const MATRIX_CALLS: readonly MatrixCall[] = [
  { name: 's3 get', service: 's3', match: (c) => c.operation === 'GetObject' },
  { name: 's3 put', service: 's3', match: (c) => c.operation === 'PutObject' },
  {
    // A delete's tombstone (the handler makes no DeleteObject: deletes are sequenced, lib/db/sequenced-state.ts).
    name: 's3 tombstone put',
    service: 's3',
    match: (c) => c.operation === 'PutObject' && putsHiddenObject(c),
  },
  ...BUDGET_CALLS,
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
}

const callNamed = (name: string): MatrixCall => MATRIX_CALLS.find((call) => call.name === name)!;

/**
 * How late the late booking lands: more than the slack of the batch's booking (24 slots at 20 writes/s for
 * its 12 PUTs: 0.6 s), so a holder that wrote in slots already passed would write past its booking.
 */
export const LATE_BOOKING_MS = 800;

/**
 * Every call x every fault, and a booking write that lands late (forwarded `LATE_BOOKING_MS` late): its
 * first slots have passed when its holder learns of them, and they pass unused.
 */
export const MATRIX_CELLS: readonly MatrixCell[] = [
  ...MATRIX_CALLS.flatMap((call) => FAULT_KINDS.map((fault) => ({ call, fault }))),
  { call: callNamed('dynamodb rate book'), fault: 'delay', delayMs: LATE_BOOKING_MS },
];

export const cellName = (cell: MatrixCell): string =>
  `${cell.call.name} x ${cell.fault}${cell.delayMs === undefined ? '' : ` ${cell.delayMs} ms`}`;
