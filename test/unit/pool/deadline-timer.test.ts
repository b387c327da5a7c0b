import { describe, expect, it, vi } from 'vitest';
import { DeadlineTimer } from '../../../lib/pool/deadline-timer.js';
import { useFakeTimersInEachTest } from './helpers.js';

interface Entry {
  name: string;
  deadline: number;
  timerIndex: number;
}

describe('DeadlineTimer', () => {
  useFakeTimersInEachTest();

  it('fires entries in deadline order on one timer, skipping removed ones', async () => {
    const fired: string[] = [];
    const timer = new DeadlineTimer<Entry>((entry) => fired.push(entry.name));
    const now = performance.now();
    const entries = [50, 10, 30, 20, 40].map((ms) => ({
      name: `t${ms}`,
      deadline: now + ms,
      timerIndex: -1,
    }));
    for (const entry of entries) timer.add(entry);
    expect(vi.getTimerCount()).toBe(1);
    timer.remove(entries[2]!); // t30
    timer.remove(entries[2]!); // removing twice is harmless
    await vi.advanceTimersByTimeAsync(25);
    expect(fired).toEqual(['t10', 't20']);
    await vi.advanceTimersByTimeAsync(100);
    expect(fired).toEqual(['t10', 't20', 't40', 't50']);
    expect(timer.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0); // nothing scheduled: no timer keeps the process alive
  });

  it('re-arms for an earlier deadline added later, and for entries added by an expiry callback', async () => {
    const fired: string[] = [];
    const timer: DeadlineTimer<Entry> = new DeadlineTimer<Entry>((entry) => {
      fired.push(entry.name);
      if (entry.name === 'first')
        timer.add({ name: 'chained', deadline: performance.now() + 5, timerIndex: -1 });
    });
    const now = performance.now();
    timer.add({ name: 'late', deadline: now + 100, timerIndex: -1 });
    timer.add({ name: 'first', deadline: now + 10, timerIndex: -1 });
    await vi.advanceTimersByTimeAsync(10);
    expect(fired).toEqual(['first']);
    await vi.advanceTimersByTimeAsync(5);
    expect(fired).toEqual(['first', 'chained']);
    await vi.advanceTimersByTimeAsync(85);
    expect(fired).toEqual(['first', 'chained', 'late']);
    expect(timer.clear()).toEqual([]);
  });
});
