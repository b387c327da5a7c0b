import { describe, expect, it, vi } from 'vitest';
import { DeadlineTimer } from '../../../lib/pool/deadline-timer.js';
import { useFakeTimersInEachTest } from './helpers.js';

interface Entry {
  name: string;
  deadline: number;
  timerIndex: number;
  timerPrev: Entry | undefined;
  timerNext: Entry | undefined;
}

function entry(name: string, deadline: number): Entry {
  return { name, deadline, timerIndex: -1, timerPrev: undefined, timerNext: undefined };
}

describe('DeadlineTimer', () => {
  useFakeTimersInEachTest();

  it('fires entries in deadline order on one timer, skipping removed ones', async () => {
    const fired: string[] = [];
    const timer = new DeadlineTimer<Entry>((entry) => fired.push(entry.name));
    const now = performance.now();
    const entries = [50, 10, 30, 20, 40].map((ms) => entry(`t${ms}`, now + ms));
    for (const e of entries) timer.add(e);
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
    const timer: DeadlineTimer<Entry> = new DeadlineTimer<Entry>((expired) => {
      fired.push(expired.name);
      if (expired.name === 'first') timer.add(entry('chained', performance.now() + 5));
    });
    const now = performance.now();
    timer.add(entry('late', now + 100));
    timer.add(entry('first', now + 10));
    await vi.advanceTimersByTimeAsync(10);
    expect(fired).toEqual(['first']);
    await vi.advanceTimersByTimeAsync(5);
    expect(fired).toEqual(['first', 'chained']);
    await vi.advanceTimersByTimeAsync(85);
    expect(fired).toEqual(['first', 'chained', 'late']);
    expect(timer.clear()).toEqual([]);
  });

  it('keeps in-order entries in a list and out-of-order ones in a heap, firing both in deadline order', async () => {
    const fired: string[] = [];
    const timer = new DeadlineTimer<Entry>((entry) => fired.push(entry.name));
    const now = performance.now();
    const entries = [10, 20, 30, 40, 15, 35, 5, 50].map((ms) => entry(`t${ms}`, now + ms));
    for (const e of entries) timer.add(e);
    expect(entries.map((e) => e.timerIndex >= 0)).toEqual([
      false,
      false,
      false,
      false,
      true,
      true,
      true,
      false,
    ]);
    timer.remove(entries[1]!); // t20, from the middle of the list
    timer.remove(entries[5]!); // t35, from the heap
    expect(timer.size).toBe(6);
    await vi.advanceTimersByTimeAsync(100);
    expect(fired).toEqual(['t5', 't10', 't15', 't30', 't40', 't50']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('clear() returns every entry, listed or heaped, and fires none', async () => {
    const timer = new DeadlineTimer<Entry>(() => {
      throw new Error('must not fire');
    });
    const now = performance.now();
    for (const ms of [10, 20, 5]) timer.add(entry(`t${ms}`, now + ms));
    expect(
      timer
        .clear()
        .map((e) => e.name)
        .sort(),
    ).toEqual(['t10', 't20', 't5']);
    expect(timer.size).toBe(0);
    await vi.advanceTimersByTimeAsync(50);
  });
});
