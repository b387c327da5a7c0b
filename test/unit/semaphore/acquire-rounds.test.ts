// The acquire loop's timing (acquire-rounds.ts) on fake timers: when the holders say when they are due
// (`nextRoundAt`), the next round waits until then (spread over the backoff cap), then polls from the base
// delay; a due time past the deadline ends the acquire at once; without one it backs off as before.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type AcquireRounds, acquireInRounds } from '../../../lib/semaphore/acquire-rounds.js';
import { SemaphoreTimeoutError } from '../../../lib/semaphore/errors.js';

const T0 = 1_000_000;

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
});
afterEach(() => {
  vi.useRealTimers();
});

/** Rounds that find nothing until `grantAt` (ms after T0), recording when each round ran. */
function rounds(
  over: Partial<AcquireRounds<{ n: number }>> & { grantAt?: number; dueAt?: () => number | undefined },
) {
  const at: number[] = [];
  const a: AcquireRounds<{ n: number }> = {
    name: 's',
    min: 1,
    deadline: T0 + 10_000,
    signal: undefined,
    backoffBaseMs: 20,
    backoffCapMs: 100,
    now: () => Date.now(),
    random: () => 0.5,
    round: async () => {
      at.push(Date.now() - T0);
      return Date.now() - T0 >= (over.grantAt ?? Number.POSITIVE_INFINITY) ? [{ n: 1 }] : [];
    },
    giveBack: async () => undefined,
    ...(over.dueAt === undefined ? {} : { nextRoundAt: over.dueAt }),
    ...over,
  };
  return { a, at };
}

describe('acquireInRounds', () => {
  it('without due times: full-jitter backoff from the base, doubling up to the cap', async () => {
    const { a, at } = rounds({ grantAt: 150 });
    const done = acquireInRounds(a);
    await vi.runAllTimersAsync();
    await expect(done).resolves.toEqual([{ n: 1 }]);
    // 0.5 x 20, 40, 80, 100 (capped), 100 ms apart
    expect(at).toEqual([0, 10, 30, 70, 120, 170]);
  });

  it('sleeps until the holders are due plus half its cap (random 0.5), then polls from the base again', async () => {
    const { a, at } = rounds({ grantAt: 600, dueAt: () => (Date.now() < T0 + 500 ? T0 + 500 : undefined) });
    const done = acquireInRounds(a);
    await vi.runAllTimersAsync();
    await expect(done).resolves.toEqual([{ n: 1 }]);
    // due at 500: woken at 550; then 10, 20, 40 (attempts 0, 1, 2 from the base)
    expect(at).toEqual([0, 550, 560, 580, 620]);
  });

  it('a due time now or past is no due time: it backs off', async () => {
    const { a, at } = rounds({ grantAt: 25, dueAt: () => Date.now() });
    const done = acquireInRounds(a);
    await vi.runAllTimersAsync();
    await done;
    expect(at).toEqual([0, 10, 30]);
  });

  it('a due time past the deadline ends it at once, saying when; one at the deadline is waited for', async () => {
    const past = rounds({ deadline: T0 + 1_000, dueAt: () => T0 + 1_001 });
    const rejected = acquireInRounds(past.a).catch((e: unknown) => e);
    await vi.runAllTimersAsync();
    const error = await rejected;
    expect(error).toBeInstanceOf(SemaphoreTimeoutError);
    expect(error).toMatchObject({ freeAt: T0 + 1_001, dueAt: T0 + 1_001, deadline: T0 + 1_000 });
    expect(past.at).toEqual([0]);

    const at = rounds({ deadline: T0 + 1_000, grantAt: 1_000, dueAt: () => T0 + 1_000 });
    const done = acquireInRounds(at.a);
    await vi.runAllTimersAsync();
    await expect(done).resolves.toEqual([{ n: 1 }]);
    // Woken at the deadline (the sleep is capped by it), where the round finds its permits.
    expect(at.at).toEqual([0, 1_000]);
  });

  it('past the deadline with nothing free: SemaphoreTimeoutError without freeAt', async () => {
    const { a, at } = rounds({ deadline: T0 + 50 });
    const rejected = acquireInRounds(a).catch((e: unknown) => e);
    await vi.runAllTimersAsync();
    const error = await rejected;
    expect(error).toBeInstanceOf(SemaphoreTimeoutError);
    expect((error as SemaphoreTimeoutError).freeAt).toBeUndefined();
    expect((error as SemaphoreTimeoutError).dueAt).toBeUndefined();
    expect(at).toEqual([0, 10, 30, 50]);
  });

  it('past the deadline behind holders running late: no freeAt (it waited), dueAt the time they said', async () => {
    const { a, at } = rounds({ deadline: T0 + 50, dueAt: () => T0 - 20 });
    const rejected = acquireInRounds(a).catch((e: unknown) => e);
    await vi.runAllTimersAsync();
    const error = await rejected;
    expect(error).toBeInstanceOf(SemaphoreTimeoutError);
    expect(error).toMatchObject({ freeAt: undefined, dueAt: T0 - 20, deadline: T0 + 50 });
    // It polled until its deadline, as behind holders that said nothing.
    expect(at).toEqual([0, 10, 30, 50]);
    expect((error as Error).message).toContain('before the deadline');
  });

  it('an abort while a round is in flight gives its grant back and rejects with the reason', async () => {
    const controller = new AbortController();
    const givenBack: unknown[] = [];
    const { a } = rounds({
      signal: controller.signal,
      round: async () => {
        controller.abort(new Error('cutoff'));
        return [{ n: 1 }];
      },
      giveBack: async (grants) => {
        givenBack.push(...grants);
      },
    });
    await expect(acquireInRounds(a)).rejects.toMatchObject({ name: 'Error', message: 'cutoff' });
    expect(givenBack).toEqual([{ n: 1 }]);
  });

  it('an aborted signal ends it before any round; a round failing after an abort reports the reason', async () => {
    const early = new AbortController();
    early.abort(new Error('already cut off'));
    const first = rounds({ signal: early.signal });
    await expect(acquireInRounds(first.a)).rejects.toMatchObject({
      name: 'Error',
      message: 'already cut off',
    });
    expect(first.at).toEqual([]);

    const controller = new AbortController();
    const { a } = rounds({
      signal: controller.signal,
      round: async () => {
        controller.abort(new Error('cutoff'));
        throw new Error('AbortError from the SDK');
      },
    });
    await expect(acquireInRounds(a)).rejects.toMatchObject({ name: 'Error', message: 'cutoff' });
  });

  it('with no deadline it backs off the same, bounded by nothing else', async () => {
    const { a, at } = rounds({ deadline: undefined, grantAt: 60 });
    const done = acquireInRounds(a);
    await vi.runAllTimersAsync();
    await done;
    expect(at).toEqual([0, 10, 30, 70]);
  });
});
