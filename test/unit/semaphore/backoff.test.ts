import { afterEach, describe, expect, it, vi } from 'vitest';
import { sleep, throwIfAborted } from '../../../lib/semaphore/backoff.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('sleep and throwIfAborted', () => {
  it('sleep resolves after its delay and not before, leaving no abort listener behind', async () => {
    vi.useFakeTimers();
    const controller = new AbortController();
    const remove = vi.spyOn(controller.signal, 'removeEventListener');
    let done = false;
    const slept = sleep(50, controller.signal).then(() => {
      done = true;
    });
    await vi.advanceTimersByTimeAsync(49);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await slept;
    expect(done).toBe(true);
    expect(remove).toHaveBeenCalledWith('abort', expect.any(Function));
    expect(vi.getTimerCount()).toBe(0);
  });

  it('sleep rejects with the reason as soon as the signal aborts, and clears its timer', async () => {
    vi.useFakeTimers();
    const controller = new AbortController();
    const slept = sleep(10_000, controller.signal);
    const reason = new Error('deadline');
    controller.abort(reason);
    await expect(slept).rejects.toBe(reason);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('sleep on a signal aborted already rejects at once with its reason, arming no timer', async () => {
    vi.useFakeTimers();
    const reason = new Error('gone');
    await expect(sleep(10_000, AbortSignal.abort(reason))).rejects.toBe(reason);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('sleep without a signal just waits', async () => {
    vi.useFakeTimers();
    const slept = sleep(5);
    await vi.advanceTimersByTimeAsync(5);
    await expect(slept).resolves.toBeUndefined();
  });

  it('throwIfAborted throws the reason of an aborted signal only', () => {
    const reason = new Error('stop');
    expect(() => throwIfAborted(undefined)).not.toThrow();
    expect(() => throwIfAborted(new AbortController().signal)).not.toThrow();
    expect(() => throwIfAborted(AbortSignal.abort(reason))).toThrow(reason);
  });
});
