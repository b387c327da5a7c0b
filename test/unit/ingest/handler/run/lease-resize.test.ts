// LeaseResize: a holder whose writes take longer than the latency its grant was sized with asks the
// semaphore once to resize its lease (issue 16: a new prefix's first lease ran its batch at half its rate),
// never before it measured enough writes, never when in step, and never after its work is done.
import { describe, expect, it } from 'vitest';
import {
  type CompletionEvents,
  LeaseResize,
  RESIZE_AFTER_WRITES,
} from '../../../../../lib/ingest/handler/run/lease-resize.js';
import type { PoolEvents } from '../../../../../lib/pool/events.js';
import type { Lease, LeaseCallOptions, LeaseUsage } from '../../../../../lib/semaphore/types.js';

/** Lets pending promise reactions run (the resize's answer reaching the watcher). */
async function flush(turns = 10): Promise<void> {
  for (let i = 0; i < turns; i++) await Promise.resolve();
}

type Completed = (e: PoolEvents['pool:taskCompleted']) => void;

function events() {
  const listeners = new Set<Completed>();
  const on: CompletionEvents = {
    on: (event, l) => {
      if (event === 'pool:taskCompleted') listeners.add(l);
    },
    off: (event, l) => {
      if (event === 'pool:taskCompleted') listeners.delete(l);
    },
  };
  const complete = () => {
    for (const l of [...listeners]) l({ id: 't', attempt: 1, queueWaitMs: 0, durationMs: 1 });
  };
  return { on, listeners, complete };
}

/** A lease of `permits` sized at `latencyMs` whose resize doubles both (or does what `resize` says). */
function lease(resize?: (usage: LeaseUsage, options?: LeaseCallOptions) => Promise<number>) {
  const calls: { usage: LeaseUsage; signal: AbortSignal | undefined }[] = [];
  const state = { permits: 4, latencyMs: 60 };
  const held: Lease = {
    get permits() {
      return state.permits;
    },
    get latencyMs() {
      return state.latencyMs;
    },
    fence: 'f',
    expiresAt: Number.POSITIVE_INFINITY,
    release: async () => undefined,
    extend: async () => undefined,
    resize: async (usage, options) => {
      calls.push({ usage, signal: options?.signal });
      if (resize !== undefined) return resize(usage, options);
      state.permits *= 2;
      state.latencyMs *= 2;
      return state.permits;
    },
  };
  return { held, calls, state };
}

/** A resize of `held` watching `pool`'s completions, with `usage` as the work's usage so far. */
function watch(
  held: Lease,
  pool: { on: CompletionEvents },
  usage: () => LeaseUsage,
  resized: (permits: number, latencyMs: number | undefined) => void = () => undefined,
  signal: AbortSignal = new AbortController().signal,
): LeaseResize {
  return new LeaseResize(held, { usage, events: pool.on, resized, bound: () => signal });
}

describe('LeaseResize', () => {
  it('resizes once, when the slot time per write is above what the grant stands for, and tells the new grant', async () => {
    const pool = events();
    const { held, calls } = lease();
    const usage = { succeeded: 0, throttled: 0, attemptMs: 0, writes: 0 };
    const told: [number, number | undefined][] = [];
    const signal = new AbortController().signal;
    const resize = watch(
      held,
      pool,
      () => ({ ...usage }),
      (permits, latencyMs) => told.push([permits, latencyMs]),
      signal,
    );
    // Slow writes, but fewer than it needs to judge: nothing.
    usage.writes = RESIZE_AFTER_WRITES - 1;
    usage.attemptMs = 100 * usage.writes;
    pool.complete();
    expect(calls).toHaveLength(0);
    // Enough writes, in step with the grant (60 ms per write): nothing.
    usage.writes = RESIZE_AFTER_WRITES;
    usage.attemptMs = 60 * usage.writes;
    pool.complete();
    expect(calls).toHaveLength(0);
    // Slower than the grant: one resize, with the usage so far and the bound's signal.
    usage.attemptMs = 61 * usage.writes;
    pool.complete();
    pool.complete();
    await flush();
    expect(told).toEqual([[8, 120]]);
    await resize.stop();
    expect(calls).toEqual([{ usage: { ...usage }, signal }]);
    // Once: later completions ask nothing (and nothing listens after stop).
    pool.complete();
    expect(calls).toHaveLength(1);
    expect(pool.listeners.size).toBe(0);
  });

  it('no measured time, or a grant that says no latency: no resize', async () => {
    for (const [usage, latencyMs] of [
      [{ succeeded: 10, throttled: 0, writes: 10 }, 60],
      [{ succeeded: 10, throttled: 0, attemptMs: 10_000, writes: 10 }, undefined],
    ] as const) {
      const pool = events();
      const { held, calls, state } = lease();
      Object.defineProperty(held, 'latencyMs', {
        get: () => (latencyMs === undefined ? undefined : state.latencyMs),
      });
      const resize = watch(held, pool, () => usage);
      pool.complete();
      await resize.stop();
      expect(calls).toHaveLength(0);
    }
  });

  it('counts attempts as writes when the store does not count writes', async () => {
    const pool = events();
    const { held, calls } = lease();
    const resize = watch(held, pool, () => ({
      succeeded: RESIZE_AFTER_WRITES - 1,
      throttled: 1,
      attemptMs: 100 * RESIZE_AFTER_WRITES,
    }));
    pool.complete();
    await resize.stop();
    expect(calls).toHaveLength(1);
  });

  it('a resize that grows nothing or fails tells nothing, and the work goes on', async () => {
    for (const outcome of [async () => 4, async () => Promise.reject(new Error('DynamoDB unreachable'))]) {
      const pool = events();
      const { held, calls } = lease(outcome);
      const told: number[] = [];
      const resize = watch(
        held,
        pool,
        () => ({ succeeded: 10, throttled: 0, attemptMs: 1_000, writes: 10 }),
        (permits) => told.push(permits),
      );
      pool.complete();
      await flush();
      expect(told).toEqual([]);
      await expect(resize.stop()).resolves.toBeUndefined();
      expect(calls).toHaveLength(1);
    }
  });

  it('a resize that moved the latency but not the permits (the lease had all it asked) tells the new latency', async () => {
    const pool = events();
    const { held, state } = lease(async () => {
      state.latencyMs = 120;
      return state.permits;
    });
    const told: [number, number | undefined][] = [];
    const resize = watch(
      held,
      pool,
      () => ({ succeeded: 10, throttled: 0, attemptMs: 1_200, writes: 10 }),
      (permits, latencyMs) => told.push([permits, latencyMs]),
    );
    pool.complete();
    await flush();
    await resize.stop();
    // The same permits now stand for half the rate: paced at the old latency they would send twice their share.
    expect(told).toEqual([[4, 120]]);
  });

  it('stop waits for a resize in flight (the release must come after it), and tells nothing once stopped', async () => {
    const pool = events();
    let answer!: (permits: number) => void;
    const { held } = lease(() => new Promise<number>((resolve) => (answer = resolve)));
    const told: number[] = [];
    const resize = watch(
      held,
      pool,
      () => ({ succeeded: 10, throttled: 0, attemptMs: 1_000, writes: 10 }),
      (permits) => told.push(permits),
    );
    pool.complete();
    let stopped = false;
    const stopping = resize.stop().then(() => {
      stopped = true;
    });
    await Promise.resolve();
    expect(stopped).toBe(false);
    answer(8);
    await stopping;
    expect(stopped).toBe(true);
    // The work was done: its pool is not regranted.
    expect(told).toEqual([]);
  });

  it('a lease that cannot resize (a static semaphore) is not watched', async () => {
    const pool = events();
    const fixed: Lease = {
      permits: 4,
      latencyMs: 60,
      fence: 'f',
      expiresAt: Number.POSITIVE_INFINITY,
      release: async () => undefined,
      extend: async () => undefined,
    };
    const watcher = watch(fixed, pool, () => ({ succeeded: 10, throttled: 0, attemptMs: 1_000, writes: 10 }));
    expect(pool.listeners.size).toBe(0);
    await watcher.stop();
    expect(pool.listeners.size).toBe(0);
  });
});
