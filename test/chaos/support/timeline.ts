import type {
  AcquireLine,
  PipelineLogLine,
  ReleaseLine,
} from '../../../lib/local/pipeline-process/event-log.js';

export interface LeaseInterval {
  name: string;
  limit: number;
  permits: number;
  fence: string;
  pid: number;
  from: number;
  /** Release time, or for a lease never released (its process was killed) its expiry. */
  to: number;
  released: boolean;
}

export interface SemaphoreTimeline {
  leases: LeaseInterval[];
  /** Per semaphore name: its limit and the most permits held at once. */
  peaks: Record<string, { limit: number; peak: number }>;
  /** Leases of killed processes never released: they come back only by expiry (reclaim). */
  orphaned: LeaseInterval[];
}

/**
 * Rebuilds who held which permits when from the logs of every process. A lease counts from its logged grant
 * (after the DynamoDB write) to its logged release (before the DynamoDB write), so a real overlap can only
 * be understated by the logging, never invented; a lease of a killed process counts until its expiry, the
 * earliest moment the semaphore may hand its permits to anyone else.
 */
export function semaphoreTimeline(lines: readonly PipelineLogLine[]): SemaphoreTimeline {
  const releases = new Map<string, ReleaseLine>();
  for (const l of lines) if (l.event === 'release') releases.set(l.fence, l);
  const leases: LeaseInterval[] = lines
    .filter((l): l is AcquireLine => l.event === 'acquire')
    .map((a) => {
      const release = releases.get(a.fence);
      return {
        name: a.name,
        limit: a.limit,
        permits: a.permits,
        fence: a.fence,
        pid: a.pid,
        from: a.t,
        to: release?.t ?? a.expiresAt,
        released: release !== undefined,
      };
    });
  const peaks: SemaphoreTimeline['peaks'] = {};
  const byName = new Map<string, LeaseInterval[]>();
  for (const l of leases) byName.set(l.name, [...(byName.get(l.name) ?? []), l]);
  for (const [name, group] of byName) {
    // Ends sort before starts at the same instant: a release logged at t frees permits for a grant at t.
    const edges = group.flatMap((l) => [
      { t: l.from, d: l.permits },
      { t: l.to, d: -l.permits },
    ]);
    edges.sort((x, y) => x.t - y.t || x.d - y.d);
    let held = 0;
    let peak = 0;
    for (const e of edges) {
      held += e.d;
      peak = Math.max(peak, held);
    }
    peaks[name] = { limit: group[0]!.limit, peak };
  }
  return { leases, peaks, orphaned: leases.filter((l) => !l.released) };
}
