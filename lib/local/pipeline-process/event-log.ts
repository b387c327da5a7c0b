import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';

interface LineBase {
  /** Epoch ms (every process on one machine shares the clock, so logs of several processes merge). */
  t: number;
  pid: number;
}

/** The process is polling (runner started). */
export interface ReadyLine extends LineBase {
  event: 'ready';
}

/** Slots booked in a prefix's schedule: logged after the booking, so its holder surely had them from `t` on. */
export interface RateBookLine extends LineBase {
  event: 'rate-book';
  container: number;
  name: string;
  ceiling: number;
  /** Writes per second the slots are spaced at. */
  rate: number;
  /** Epoch ms of the first slot and of the end of the last one. */
  startAt: number;
  endsAt: number;
  /** Slots booked. */
  writes: number;
  fence: string;
}

/**
 * A booking's holder paces lower: at its first slot the schedule's rate was lower than it booked at, or an
 * overloaded round of its writes cut its pace. Its slots from `decreasedAt` (the decrease, or the cut) on
 * are stretched to `rate` (docs/fleet-cap.md#the-control-law). Logged as the step answers.
 */
export interface RateStepLine extends LineBase {
  event: 'rate-step';
  container: number;
  name: string;
  fence: string;
  /** Writes per second the holder paces at from now on. */
  rate: number;
  /** Epoch ms of the decrease. */
  decreasedAt: number;
}

/**
 * A queued booking's holder paces higher from its first slot: the schedule's rate rose after the booking,
 * and its slots keep their window (to the booking's end) at `rate` (docs/fleet-cap.md, "What a holder does").
 */
export interface RateRaiseLine extends LineBase {
  event: 'rate-raise';
  container: number;
  name: string;
  fence: string;
  /** Writes per second the holder paces at from `at` on. */
  rate: number;
  /** Epoch ms it took the raised rate (its first slot). */
  at: number;
}

/** A booking's writes have drained: logged before its report, so its holder surely wrote no later than `t`. */
export interface RateReportLine extends LineBase {
  event: 'rate-report';
  container: number;
  name: string;
  rate: number;
  fence: string;
  /** S3 write requests the container started on the prefix under the booking (retries included). */
  attempts: number;
  /**
   * Its holder did not report it: it booked again there (its slots were over with writes left), or its
   * invocation ended first. Logged then.
   */
  unreported?: true;
}

/**
 * An S3 write started on a tenant prefix outside any booking of its container: none open on the prefix, or
 * more than `SLOT_CATCH_UP_MS` before its first slot or after its last. A tenant with few writes in its batch
 * writes without one (`large: false`); a tenant the container built the prefix's budget for (`large: true`)
 * never may. Logged as the request starts.
 */
export interface UnbookedWriteLine extends LineBase {
  event: 'unbooked-write';
  container: number;
  name: string;
  large: boolean;
  /**
   * How far outside the open booking's slots (and their catch-up) the write's request was sent, ms: a task
   * the pool started in its slot sends its request later by as long as the event loop stalls. Absent when
   * no booking was open.
   */
  outsideMs?: number;
}

/** One invocation as the event-source runner judged it, with what its container's S3 client saw. */
export interface InvocationLine extends LineBase {
  event: 'invocation';
  container: number;
  records: number;
  deleted: number;
  failed: number;
  outcome: 'success' | 'partial' | 'failed';
  /** Most S3 requests in flight at once in the container during the invocation. */
  peakInFlight: number;
  /**
   * Most S3 requests in flight on one tenant prefix beyond its bound then (<= 0: never): the holder's pool
   * concurrency while it has a holder (booked in the invocation), else `SMALL_TENANTS.writes - 1` (an
   * unbooked tenant's writes).
   */
  peakOverBound: number;
  /** The prefix of `peakOverBound` and its bound then (`prefix:<bucket>/t=x/ (bound 15)`); empty with none. */
  peakOverBoundAt: string;
  /** Records of the batch SQS had delivered before (`ApproximateReceiveCount` > 1). */
  redelivered: number;
  deadLettered: number;
  retries: number;
  throttles: number;
  timeouts: number;
  /** Longest event-loop stall of the process since the previous invocation line (ms). */
  loopStallMs?: number;
}

/** Graceful stop finished (SIGTERM): every invocation settled, every booking reported. */
export interface StoppedLine extends LineBase {
  event: 'stopped';
}

export type PipelineLogLine =
  | ReadyLine
  | RateBookLine
  | RateStepLine
  | RateRaiseLine
  | RateReportLine
  | UnbookedWriteLine
  | InvocationLine
  | StoppedLine;

/** Distributes `Omit` over the union, so each line keeps its own fields. */
export type PipelineLogEntry = PipelineLogLine extends infer L
  ? L extends PipelineLogLine
    ? Omit<L, 't' | 'pid'>
    : never
  : never;

/**
 * An append-only NDJSON log written with one synchronous `write` per line: a SIGKILL can only lose the line
 * being built, never leave earlier ones in a buffer.
 */
export class EventLog {
  readonly #fd: number;

  constructor(path: string) {
    this.#fd = openSync(path, 'a');
  }

  write(entry: PipelineLogEntry): void {
    writeSync(this.#fd, `${JSON.stringify({ t: Date.now(), pid: process.pid, ...entry })}\n`);
  }

  close(): void {
    closeSync(this.#fd);
  }
}

/** Reads a log (of a live or dead process); a torn last line (killed mid-write) is ignored. */
export function readEventLog(path: string): PipelineLogLine[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT') return [];
    throw error;
  }
  const lines: PipelineLogLine[] = [];
  for (const raw of text.split('\n')) {
    if (raw === '') continue;
    try {
      lines.push(JSON.parse(raw) as PipelineLogLine);
    } catch {
      // Only the last line can be torn; anything else unreadable would be a bug worth seeing in the counts.
    }
  }
  return lines;
}
