// A tenant's wait for its prefix's turn (acquire-turn.ts): past its deadline it stays, once, for holders
// that said they would be done by now (running late), and only for them.
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  acquireForTurn,
  STUCK_HOLDER_LATE_MS,
  timedOutBehindLateHolders,
} from '../../../../../lib/ingest/handler/run/acquire-turn.js';
import { SemaphoreTimeoutError } from '../../../../../lib/semaphore/errors.js';
import type { AcquireOptions, Lease, Semaphore } from '../../../../../lib/semaphore/types.js';

const NOW = 1_000_000;
const lease = { permits: 1 } as Lease;

/** A semaphore answering each acquire from `answers` in turn (an error is thrown), recording the options. */
function scripted(...answers: Array<Lease | Error>) {
  const calls: AcquireOptions[] = [];
  const semaphore: Semaphore = {
    name: 'prefix:t',
    limit: 10,
    acquire: async (_k, options = {}) => {
      calls.push(options);
      const answer = answers.shift();
      if (answer === undefined) throw new Error('no more answers');
      if (answer instanceof Error) throw answer;
      return answer;
    },
  };
  return { semaphore, calls };
}

const late = () => new SemaphoreTimeoutError('prefix:t', 1, NOW, undefined, NOW - 300);
const options = () => ({ min: 1, deadline: NOW, requests: 50 });

afterEach(() => {
  vi.useRealTimers();
});

describe('timedOutBehindLateHolders', () => {
  it('a timeout whose holders were due already, and nothing else', () => {
    expect(timedOutBehindLateHolders(late(), NOW)).toBe(true);
    // Due later than the deadline (gave up at once), said nothing, due exactly now or in the future.
    expect(timedOutBehindLateHolders(new SemaphoreTimeoutError('p', 1, NOW, NOW + 500), NOW)).toBe(false);
    expect(timedOutBehindLateHolders(new SemaphoreTimeoutError('p', 1, NOW), NOW)).toBe(false);
    expect(timedOutBehindLateHolders(new SemaphoreTimeoutError('p', 1, NOW, undefined, NOW), NOW)).toBe(true);
    expect(timedOutBehindLateHolders(new SemaphoreTimeoutError('p', 1, NOW, undefined, NOW + 1), NOW)).toBe(
      false,
    );
    expect(timedOutBehindLateHolders(new Error('DynamoDB down'), NOW)).toBe(false);
    // Only a semaphore's timeout says so, whatever another error carries.
    expect(timedOutBehindLateHolders(Object.assign(new Error('other'), { dueAt: NOW - 10 }), NOW)).toBe(
      false,
    );
    // Late by more than STUCK_HOLDER_LATE_MS: stuck (crashed, stalled), not about to release.
    const stuck = (late: number) => new SemaphoreTimeoutError('p', 1, NOW, undefined, NOW - late);
    expect(timedOutBehindLateHolders(stuck(STUCK_HOLDER_LATE_MS), NOW)).toBe(true);
    expect(timedOutBehindLateHolders(stuck(STUCK_HOLDER_LATE_MS + 1), NOW)).toBe(false);
  });
});

describe('acquireForTurn', () => {
  it('a grant at the first try is the lease; one call', async () => {
    const { semaphore, calls } = scripted(lease);
    await expect(acquireForTurn(semaphore, 5, options(), 1_000, NOW + 5_000)).resolves.toBe(lease);
    expect(calls).toHaveLength(1);
  });

  it('behind late holders it asks once more, until now + grace, with the same options', async () => {
    vi.useFakeTimers({ now: NOW });
    const { semaphore, calls } = scripted(late(), lease);
    await expect(acquireForTurn(semaphore, 5, options(), 1_000, NOW + 5_000)).resolves.toBe(lease);
    expect(calls).toEqual([options(), { ...options(), deadline: NOW + 1_000 }]);
  });

  it('the grace never runs past `latest`, and none is left: the timeout as it was', async () => {
    vi.useFakeTimers({ now: NOW });
    const capped = scripted(late(), lease);
    await acquireForTurn(capped.semaphore, 5, options(), 1_000, NOW + 400);
    expect(capped.calls[1]?.deadline).toBe(NOW + 400);
    const first = late();
    const none = scripted(first, lease);
    await expect(acquireForTurn(none.semaphore, 5, options(), 1_000, NOW)).rejects.toBe(first);
    expect(none.calls).toHaveLength(1);
  });

  it('holders due after the deadline, holders that said nothing, or another error: no second wait', async () => {
    vi.useFakeTimers({ now: NOW });
    for (const error of [
      new SemaphoreTimeoutError('p', 1, NOW, NOW + 2_000),
      new SemaphoreTimeoutError('p', 1, NOW),
      new Error('DynamoDB down'),
    ]) {
      const { semaphore, calls } = scripted(error, lease);
      await expect(acquireForTurn(semaphore, 5, options(), 1_000, NOW + 5_000)).rejects.toBe(error);
      expect(calls).toHaveLength(1);
    }
  });

  it('an aborted signal: no second wait', async () => {
    vi.useFakeTimers({ now: NOW });
    const controller = new AbortController();
    controller.abort(new Error('cutoff'));
    const first = late();
    const { semaphore, calls } = scripted(first, lease);
    await expect(
      acquireForTurn(semaphore, 5, { ...options(), signal: controller.signal }, 1_000, NOW + 5_000),
    ).rejects.toBe(first);
    expect(calls).toHaveLength(1);
  });

  it('the second wait failing too: its own error (with when the holders said now)', async () => {
    vi.useFakeTimers({ now: NOW });
    const again = new SemaphoreTimeoutError('prefix:t', 1, NOW + 1_000, NOW + 3_000);
    const { semaphore } = scripted(late(), again);
    await expect(acquireForTurn(semaphore, 5, options(), 1_000, NOW + 5_000)).rejects.toBe(again);
  });
});
