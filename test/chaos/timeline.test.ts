import { describe, expect, it } from 'vitest';
import type { PipelineLogLine } from '../../lib/local/pipeline-process/event-log.js';
import { semaphoreTimeline } from './support/timeline.js';

const acquire = (t: number, pid: number, fence: string, permits: number, expiresAt = t + 10_000) =>
  ({ event: 'acquire', t, pid, container: 0, name: 'p', limit: 4, permits, fence, expiresAt }) as const;
const release = (t: number, pid: number, fence: string, permits: number) =>
  ({ event: 'release', t, pid, container: 0, name: 'p', permits, fence }) as const;

describe('semaphore timeline from the process logs', () => {
  it('finds holders over the limit', () => {
    const lines: PipelineLogLine[] = [acquire(0, 1, 'a', 3), acquire(5, 2, 'b', 2), release(9, 1, 'a', 3)];
    expect(semaphoreTimeline(lines).peaks.p).toEqual({ limit: 4, peak: 5 });
  });

  it('a release and a grant at the same instant do not overlap', () => {
    const lines: PipelineLogLine[] = [acquire(0, 1, 'a', 4), release(7, 1, 'a', 4), acquire(7, 2, 'b', 4)];
    expect(semaphoreTimeline(lines).peaks.p?.peak).toBe(4);
  });

  it("counts a killed process's lease until its expiry, and flags it orphaned", () => {
    const killed = acquire(0, 1, 'a', 4, 6_000);
    const before: PipelineLogLine[] = [killed, acquire(5_000, 2, 'b', 1)];
    const after: PipelineLogLine[] = [killed, acquire(6_000, 2, 'b', 4), release(6_500, 2, 'b', 4)];
    expect(semaphoreTimeline(before).peaks.p?.peak).toBe(5);
    expect(semaphoreTimeline(after).peaks.p?.peak).toBe(4);
    expect(semaphoreTimeline(after).orphaned.map((l) => l.fence)).toEqual(['a']);
  });
});
