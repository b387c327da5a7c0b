import { describe, expect, it } from 'vitest';
import { Waiters } from '../../../lib/pool/waiters.js';
import { stateOf } from './helpers.js';

describe('Waiters (the callers of onQueueRoom, onSettled, onIdle)', () => {
  it('counts its waiters, wakes them all at once, and keeps one that arrives later for the next wake', async () => {
    const waiters = new Waiters();
    expect(waiters.size).toBe(0);
    const first = waiters.wait();
    const second = waiters.wait();
    expect(waiters.size).toBe(2);
    waiters.wakeAll();
    expect(waiters.size).toBe(0);
    const later = waiters.wait();
    expect(waiters.size).toBe(1);
    expect([await stateOf(first), await stateOf(second), await stateOf(later)]).toEqual([
      'fulfilled',
      'fulfilled',
      'pending',
    ]);
    waiters.wakeAll();
    expect(await stateOf(later)).toBe('fulfilled');
  });
});
