// A prefix's rate schedule as the chaos suites see it (lib/semaphore/budget-item.ts): the bookings rebuilt
// from the handler's logged budgets (every process's event log, killed ones included), checked against the
// schedule writes DynamoDB applied (the fault proxy's log), and the item's own invariant read from a scan.
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { ProxiedCall } from '../../../lib/local/faults/fault-proxy.js';
import type {
  PipelineLogLine,
  RateBookLine,
  RateRaiseLine,
  RateReportLine,
  RateStepLine,
} from '../../../lib/local/pipeline-process/event-log.js';
import { budgetKey } from '../../../lib/semaphore/budget-item.js';
import type { BookedSlots } from './rate-check.js';

/** A booking as logged (`rate-book`), with what its holder did with it. */
export interface LoggedBooking extends BookedSlots {
  readonly name: string;
  readonly pid: number;
  readonly endsAt: number;
  readonly ceiling: number;
  /** Whether its report was logged (false: its process was killed first). */
  readonly reported: boolean;
}

/**
 * The bookings in `lines` (every process's log), per budget name: each from its `rate-book` to its
 * `rate-report`, the decreases its holder followed (`rate-step`), the raised rate it took at its first slot
 * (`rate-raise`) and the writes it started. A booking never
 * reported belongs to a killed process: its writes may have gone on until `diedAt(pid)`.
 */
export function bookingsByName(
  lines: readonly PipelineLogLine[],
  diedAt: (pid: number) => number,
): Map<string, LoggedBooking[]> {
  // Fences are numbered per process: a restarted process numbers its containers' bookings afresh.
  const key = (l: { pid: number; fence: string }) => `${l.pid}:${l.fence}`;
  const reports = new Map<string, RateReportLine>();
  const steps = new Map<string, RateStepLine[]>();
  const raises = new Map<string, RateRaiseLine>();
  for (const l of lines) {
    if (l.event === 'rate-report') reports.set(key(l), l);
    if (l.event === 'rate-step') steps.set(key(l), [...(steps.get(key(l)) ?? []), l]);
    if (l.event === 'rate-raise') raises.set(key(l), l);
  }
  const byName = new Map<string, LoggedBooking[]>();
  for (const book of lines.filter((l): l is RateBookLine => l.event === 'rate-book')) {
    const report = reports.get(key(book));
    const raise = raises.get(key(book));
    const booking: LoggedBooking = {
      fence: key(book),
      name: book.name,
      pid: book.pid,
      ceiling: book.ceiling,
      rate: book.rate,
      startAt: book.startAt,
      endsAt: book.endsAt,
      writes: book.writes,
      decreases: (steps.get(key(book)) ?? [])
        .sort((a, b) => a.t - b.t)
        .map((s) => ({ at: s.decreasedAt, rate: s.rate })),
      ...(raise !== undefined ? { raised: { at: raise.at, rate: raise.rate } } : {}),
      attempts: report?.attempts,
      until: report?.t ?? diedAt(book.pid),
      reported: report !== undefined,
    };
    byName.set(book.name, [...(byName.get(book.name) ?? []), booking]);
  }
  return byName;
}

interface UpdateInput {
  TableName?: string;
  Key?: { pk?: { S?: string } };
  ExpressionAttributeValues?: Record<string, AttributeValue>;
}

/**
 * The bookings of budget `name` in `table` that no applied schedule write stands for: DynamoDB applied
 * (status 200, its answer lost or not) no `UpdateItem` of the item that moved its first free slot to the
 * booking's end. A booking the schedule does not hold is one whose slots another may book.
 */
export function bookingsNotInSchedule(
  calls: readonly ProxiedCall[],
  table: string,
  name: string,
  bookings: readonly LoggedBooking[],
): LoggedBooking[] {
  const pk = budgetKey(name).pk?.S;
  const freeAts = new Set<number>();
  for (const c of calls) {
    if (c.upstreamStatus !== 200 || c.call.operation !== 'UpdateItem') continue;
    let input: UpdateInput;
    try {
      input = JSON.parse(c.call.body) as UpdateInput;
    } catch {
      continue;
    }
    if (input.TableName !== table || input.Key?.pk?.S !== pk) continue;
    freeAts.add(Number(input.ExpressionAttributeValues?.[':freeAt']?.N));
  }
  return bookings.filter((b) => !freeAts.has(b.endsAt));
}

/** What one scan of a schedule item says: its rate, and any broken invariant. */
export interface ScheduleSample {
  readonly rate: number;
  readonly version: number;
  readonly violations: readonly string[];
}

/** Grid slack for rates kept to a millionth (`onRateGrid`). */
const RATE_GRID = 1e-6;

/**
 * Checks one schedule item (docs/fleet-cap.md#state): its rate within `[ceiling x min share, ceiling]`, and
 * its version never behind the one seen before (`previous`: every write moves it on by one).
 */
export function sampleScheduleItem(
  item: Record<string, AttributeValue>,
  ceiling: number,
  minShare: number,
  previousVersion: number,
): ScheduleSample {
  const where = item.pk?.S ?? '?';
  const rate = Number(item.rate?.N);
  const version = Number(item.version?.N);
  const violations: string[] = [];
  if (!(rate <= ceiling + RATE_GRID && rate >= ceiling * minShare - RATE_GRID))
    violations.push(`${where}: rate ${rate} outside [${ceiling * minShare}, ${ceiling}]`);
  if (!(version >= previousVersion))
    violations.push(`${where}: version ${version} behind ${previousVersion} seen before`);
  for (const field of ['freeAt', 'decreasedAt'])
    if (!Number.isFinite(Number(item[field]?.N))) violations.push(`${where}: ${field} is not a number`);
  return { rate, version, violations };
}
