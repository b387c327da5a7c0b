// The pipeline run's accounting of the rate engine (`FLEET_CAP=rate`): the grants rebuilt from every
// process's event log (killed ones included), the writes the chaos proxy let through per prefix, the rate
// invariant between them, and what the killed processes left in the budget items.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { type DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import type {
  InvocationLine,
  PipelineLogLine,
  RateReleaseLine,
  RateTakeLine,
} from '../../../lib/local/pipeline-process/event-log.js';
import {
  firstSegmentPrefix,
  S3BehaviourModel,
  type S3Decision,
  type S3RequestKind,
} from '../../../lib/local/s3-behaviour/s3-behaviour-model.js';
import { budgetKey, parseBudgetItem } from '../../../lib/semaphore/budget-item.js';
import { DynamoRateBudget } from '../../../lib/semaphore/dynamo-rate-budget.js';
import { peakWindowCount, RATE_WINDOW_MS, type RateGrant, rateViolations } from './rate-check.js';

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
  /** Grants logged, and of those the ones killed processes never released. */
  readonly leases: number;
  readonly orphaned: number;
  /** Writes/s the orphaned leases held when their processes died. */
  readonly orphanedRate: number;
  /** Holder entries left in the budget items by processes that stopped gracefully (must be 0). */
  readonly leakedByGracefulProcesses: number;
  /** Every budget taken whole (nothing held) after the run, within its orphans' expiry + 1 s. */
  readonly wholeBudgetTaken: boolean;
  /** Slowest such take, ms after the later of the call and the orphaned leases' expiry. */
  readonly wholeBudgetLateMs: number;
  /** Writes started on a prefix with no lease held on it (small tenants). */
  readonly unleasedWrites: number;
  /** Per prefix: most writes accepted in any window of the check. */
  readonly windowPeaks: Record<string, number>;
  /** The most skew any window was allowed: both processes' longest event-loop stalls around it, plus transit (ms). */
  readonly skewMs: number;
  readonly violations: readonly string[];
}

/** Loopback hop and SDK middleware on top of the two processes' loop stalls. */
const TRANSIT_MS = 25;

/** The grants of each budget name: a take to its release, or to its lease end when never released. */
function grantsByName(lines: readonly PipelineLogLine[]): Map<string, (RateGrant & { released: boolean })[]> {
  const releases = new Map<string, RateReleaseLine>();
  for (const l of lines) if (l.event === 'rate-release') releases.set(l.fence, l);
  const byName = new Map<string, (RateGrant & { released: boolean })[]>();
  for (const take of lines.filter((l): l is RateTakeLine => l.event === 'rate-take')) {
    const release = releases.get(take.fence);
    const grant = {
      fence: take.fence,
      rate: take.rate,
      from: take.t,
      to: release?.t ?? take.expiresAt,
      released: release !== undefined,
    };
    byName.set(take.name, [...(byName.get(take.name) ?? []), grant]);
  }
  return byName;
}

/**
 * The rate engine's accounting of a finished run: `lines` from every process, `writes` the proxy's log,
 * `parentStallMs` this process's longest loop stall. Takes every budget whole at the end (after its
 * orphans' expiry), which also shows the killed holders' rates came back.
 */
export async function accountRates(run: {
  readonly lines: readonly PipelineLogLine[];
  readonly writes: WriteLoggingModel['writes'];
  readonly bucket: string;
  readonly dynamodb: DynamoDBClient;
  readonly tableName: string;
  readonly parentStalls: readonly StallSample[];
}): Promise<RateAccount> {
  const { lines, bucket, dynamodb, tableName } = run;
  // Every process's invocation lines, in time order: each says the longest stall since its previous one.
  const childStalls = lines
    .filter((l): l is InvocationLine => l.event === 'invocation')
    .map((l) => ({ t: l.t, stallMs: l.loopStallMs ?? 0 }))
    .sort((a, b) => a.t - b.t);
  const skew = skewAt(run.parentStalls, childStalls, RATE_WINDOW_MS);
  let skewMs = 0;
  const byName = grantsByName(lines);
  const violations: string[] = [];
  const windowPeaks: Record<string, number> = {};
  const prefixes = new Set(run.writes.map((w) => w.prefix));
  for (const prefix of prefixes) {
    const name = `prefix:${bucket}/${prefix}`;
    const accepted = run.writes.filter((w) => w.prefix === prefix && w.accepted).map((w) => w.at);
    const unleased = lines.filter((l) => l.event === 'unleased-write' && l.name === name).map((l) => l.t);
    windowPeaks[prefix] = peakWindowCount(accepted);
    skewMs = Math.max(skewMs, ...accepted.map(skew));
    violations.push(...rateViolations(prefix, accepted, byName.get(name) ?? [], { skewMs: skew, unleased }));
  }
  const all = [...byName.values()].flat();
  const orphans = all.filter((g) => !g.released);
  const orphanFences = new Set(orphans.map((g) => g.fence));
  let leaked = 0;
  let wholeBudgetTaken = true;
  let wholeBudgetLateMs = Number.NEGATIVE_INFINITY;
  for (const [name, grants] of byName) {
    const key = budgetKey(name);
    const read = async () =>
      parseBudgetItem(
        (await dynamodb.send(new GetItemCommand({ TableName: tableName, Key: key, ConsistentRead: true })))
          .Item,
      );
    const before = await read();
    leaked += [...(before?.holders.keys() ?? [])].filter((fence) => !orphanFences.has(fence)).length;
    const ceiling = Math.max(
      ...lines
        .filter((l): l is RateTakeLine => l.event === 'rate-take' && l.name === name)
        .map((l) => l.ceiling),
    );
    const expiry = Math.max(0, ...grants.filter((g) => !g.released).map((g) => g.to));
    const calledAt = Date.now();
    try {
      const budget = new DynamoRateBudget({ client: dynamodb, tableName, name, ceiling });
      // Asks for the ceiling: a budget below it is had whole once nothing holds it (docs/fleet-cap.md).
      const lease = await budget.take(ceiling, {
        least: ceiling,
        deadline: Math.max(calledAt, expiry) + 1_000,
        leaseMs: 5_000,
      });
      wholeBudgetLateMs = Math.max(wholeBudgetLateMs, Date.now() - Math.max(calledAt, expiry));
      const whole = (await read())?.budget;
      if (lease.rate !== whole) wholeBudgetTaken = false;
      await lease.release({ accepted: 0, throttled: 0, starved: false });
    } catch {
      wholeBudgetTaken = false;
    }
  }
  return {
    leases: all.length,
    orphaned: orphans.length,
    orphanedRate: orphans.reduce((sum, g) => sum + g.rate, 0),
    leakedByGracefulProcesses: leaked,
    wholeBudgetTaken,
    wholeBudgetLateMs,
    unleasedWrites: lines.filter((l) => l.event === 'unleased-write').length,
    windowPeaks,
    skewMs,
    violations,
  };
}
