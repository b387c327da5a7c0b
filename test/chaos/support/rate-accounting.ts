// The pipeline run's accounting of the rate schedule: the bookings rebuilt from every
// process's event log (killed ones included), the writes the chaos proxy let through per prefix, the rate
// invariant between them, and what the killed processes left in the schedules.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type {
  InvocationLine,
  PipelineLogLine,
  UnbookedWriteLine,
} from '../../../lib/local/pipeline-process/event-log.js';
import {
  firstSegmentPrefix,
  S3BehaviourModel,
  type S3Decision,
  type S3RequestKind,
} from '../../../lib/local/s3-behaviour/s3-behaviour-model.js';
import { DynamoRateBudget } from '../../../lib/semaphore/dynamo-rate-budget.js';
import { bookingsByName } from './budget-history.js';
import { peakWindowCount, RATE_WINDOW_MS, rateViolations } from './rate-check.js';

/** The S3 model of the chaos proxy, logging when each write was decided and what it decided. */
export class WriteLoggingModel extends S3BehaviourModel {
  readonly writes: { readonly at: number; readonly prefix: string; readonly accepted: boolean }[] = [];

  override decide(kind: S3RequestKind, key: string): S3Decision {
    const decision = super.decide(kind, key);
    // Refused writes never reached "S3"; every other outcome consumed a token (counts against the rate).
    if (kind === 'write')
      this.writes.push({
        at: Date.now(),
        prefix: firstSegmentPrefix(key),
        accepted: decision.outcome !== 'slowdown',
      });
    return decision;
  }
}

/** A stall measure over time: the longest event-loop stall seen in the period ending at `t`. */
export interface StallSample {
  readonly t: number;
  readonly stallMs: number;
}

/** This process's event-loop stalls while the run goes (the proxy stamps writes on it), per half second. */
export function watchLoop(): { stop(): StallSample[] } {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  const samples: StallSample[] = [];
  const sample = () => {
    samples.push({ t: Date.now(), stallMs: Math.round(delay.max / 1e6) });
    delay.reset();
  };
  delay.enable();
  const timer = setInterval(sample, 500);
  return {
    stop: () => {
      clearInterval(timer);
      sample();
      delay.disable();
      return samples;
    },
  };
}

/** How far back a window's skew looks for stalls: longer than any invocation's write phase here. */
const STALL_LOOKBACK_MS = 2_000;

/**
 * The skew of the window starting at `t`: the longest stall of each process in the periods that overlap
 * `[t - STALL_LOOKBACK_MS, t + windowMs]` (a period ends at its sample), summed, plus transit.
 */
function skewAt(parent: readonly StallSample[], child: readonly StallSample[], windowMs: number) {
  const around = (samples: readonly StallSample[], t: number) => {
    let worst = 0;
    for (let i = 0; i < samples.length; i++) {
      const end = samples[i]!.t;
      const start = i === 0 ? Number.NEGATIVE_INFINITY : samples[i - 1]!.t;
      if (end >= t - STALL_LOOKBACK_MS && start <= t + windowMs) worst = Math.max(worst, samples[i]!.stallMs);
    }
    return worst;
  };
  return (t: number) => around(parent, t) + around(child, t) + TRANSIT_MS;
}

/** What the rate engine did in a pipeline run, and every rate invariant it broke. */
export interface RateAccount {
  /** Bookings logged, the slots they booked, the decreases their holders followed and the raised rates they took. */
  readonly bookings: number;
  readonly slots: number;
  readonly decreasesFollowed: number;
  readonly raisesTaken: number;
  /** Lowest rate a booking was made at (writes/s). */
  readonly lowestRate: number;
  /** Bookings killed processes never reported, and their rates summed (writes/s). */
  readonly orphaned: number;
  readonly orphanedRate: number;
  /** After the run, a booking of one slot on every prefix: booked, and at most this long after the call (ms). */
  readonly nextSlotBooked: boolean;
  readonly nextSlotLateMs: number;
  /** Writes started on a prefix outside any booking: small tenants (allowed), and large ones (never). */
  readonly unbookedWrites: number;
  readonly largeUnbookedWrites: number;
  /** Large tenants' writes sent after their slots by no more than the stalls around them (started in time). */
  readonly largeLateSends: number;
  /** Per prefix: most writes accepted in any window of the check. */
  readonly windowPeaks: Record<string, number>;
  /** The most skew any window was allowed: both processes' longest event-loop stalls around it, plus transit (ms). */
  readonly skewMs: number;
  readonly violations: readonly string[];
}

/** Loopback hop and SDK middleware on top of the two processes' loop stalls. */
const TRANSIT_MS = 25;

/**
 * The rate engine's accounting of a finished run: `lines` from every process, `writes` the proxy's log,
 * `parentStalls` this process's loop stalls, `killedAt` when each killed process died. Books a slot on
 * every prefix at the end, which shows the killed holders left nothing booked past their own slots.
 */
export async function accountRates(run: {
  readonly lines: readonly PipelineLogLine[];
  readonly writes: WriteLoggingModel['writes'];
  readonly bucket: string;
  readonly dynamodb: DynamoDBClient;
  readonly tableName: string;
  readonly parentStalls: readonly StallSample[];
  readonly killedAt: ReadonlyMap<number, number>;
}): Promise<RateAccount> {
  const { lines, bucket, dynamodb, tableName } = run;
  // Every process's invocation lines, in time order: each says the longest stall since its previous one.
  const childStalls = lines
    .filter((l): l is InvocationLine => l.event === 'invocation')
    .map((l) => ({ t: l.t, stallMs: l.loopStallMs ?? 0 }))
    .sort((a, b) => a.t - b.t);
  const skew = skewAt(run.parentStalls, childStalls, RATE_WINDOW_MS);
  let skewMs = 0;
  // A process not killed wrote until its last line (it stopped gracefully).
  const lastLine = new Map<number, number>();
  for (const l of lines) lastLine.set(l.pid, Math.max(lastLine.get(l.pid) ?? 0, l.t));
  const byName = bookingsByName(lines, (pid) => run.killedAt.get(pid) ?? lastLine.get(pid) ?? Date.now());
  const violations: string[] = [];
  const windowPeaks: Record<string, number> = {};
  const unbookedLines = lines.filter((l): l is UnbookedWriteLine => l.event === 'unbooked-write');
  // A large tenant's write with no booking open is a violation; one sent outside its booking's slots by no
  // more than the processes' stalls around it was started in its slot and sent late (its request leaves
  // the event loop after the pool started it).
  const late = (l: UnbookedWriteLine) => l.outsideMs !== undefined && l.outsideMs <= skew(l.t);
  const largeUnbooked = unbookedLines.filter((l) => l.large && !late(l));
  for (const l of largeUnbooked)
    violations.push(
      `${l.name}: a large tenant's write started outside a booking at ${l.t}` +
        (l.outsideMs === undefined ? ' (none open)' : ` (by ${l.outsideMs} ms, skew ${skew(l.t)} ms)`),
    );
  const prefixes = new Set(run.writes.map((w) => w.prefix));
  for (const prefix of prefixes) {
    const name = `prefix:${bucket}/${prefix}`;
    const accepted = run.writes.filter((w) => w.prefix === prefix && w.accepted).map((w) => w.at);
    const unbooked = unbookedLines.filter((l) => l.name === name && !l.large).map((l) => l.t);
    windowPeaks[prefix] = peakWindowCount(accepted);
    skewMs = Math.max(skewMs, ...accepted.map(skew));
    violations.push(...rateViolations(prefix, accepted, byName.get(name) ?? [], { skewMs: skew, unbooked }));
  }
  const all = [...byName.values()].flat();
  const orphans = all.filter((b) => !b.reported && run.killedAt.has(b.pid));
  let nextSlotBooked = true;
  let nextSlotLateMs = Number.NEGATIVE_INFINITY;
  for (const [name, bookings] of byName) {
    const ceiling = Math.max(...bookings.map((b) => b.ceiling));
    const calledAt = Date.now();
    try {
      const budget = new DynamoRateBudget({ client: dynamodb, tableName, name, ceiling });
      // Nothing is held: once the run's writes are done, its next slot is at most a second away.
      const booking = await budget.book({
        writes: 1,
        latestStart: calledAt + 1_000,
        writeBy: calledAt + 5_000,
      });
      nextSlotLateMs = Math.max(nextSlotLateMs, booking.startAt - calledAt);
    } catch {
      nextSlotBooked = false;
    }
  }
  return {
    bookings: all.length,
    slots: all.reduce((sum, b) => sum + b.writes, 0),
    decreasesFollowed: all.reduce((sum, b) => sum + b.decreases.length, 0),
    raisesTaken: all.filter((b) => b.raised !== undefined).length,
    lowestRate: Math.min(...all.map((b) => b.rate)),
    orphaned: orphans.length,
    orphanedRate: orphans.reduce((sum, b) => sum + b.rate, 0),
    nextSlotBooked,
    nextSlotLateMs,
    unbookedWrites: unbookedLines.filter((l) => !l.large).length,
    largeUnbookedWrites: largeUnbooked.length,
    largeLateSends: unbookedLines.filter((l) => l.large && late(l)).length,
    windowPeaks,
    skewMs,
    violations,
  };
}
