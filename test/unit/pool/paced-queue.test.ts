import { describe, expect, it } from 'vitest';
import { PacedQueue, type PacedQueueEntry } from '../../../lib/pool/paced-queue.js';

interface Entry extends PacedQueueEntry {
  readonly name: string;
}

/** `w…` names a paced entry, `r…` an unpaced one. */
function entry(name: string, priority = 0): Entry {
  return { name, priority, paced: name.startsWith('w'), queueIndex: -1 };
}

function queueOf(...entries: Entry[]): PacedQueue<Entry> {
  const queue = new PacedQueue<Entry>();
  for (const e of entries) queue.push(e);
  return queue;
}

/** Pops until the queue offers nothing, and names what came out. */
function popAll(queue: PacedQueue<Entry>): string[] {
  const out: string[] = [];
  for (let e = queue.pop(); e !== undefined; e = queue.pop()) out.push(e.name);
  return out;
}

describe('PacedQueue', () => {
  it('gives back the time each entry was queued with, from whichever kind it came out of', () => {
    const queue = new PacedQueue<Entry>();
    const pushed = [entry('w-low', 0), entry('r-high', 2), entry('w-mid', 1), entry('r-low', 0)];
    for (const [i, e] of pushed.entries()) queue.push(e, 100 + i);
    const out: string[] = [];
    for (let e = queue.pop(); e !== undefined; e = queue.pop()) out.push(`${e.name}@${queue.poppedQueuedAt}`);
    expect(out).toEqual(['r-high@101', 'w-mid@102', 'w-low@100', 'r-low@103']);
  });

  it('is empty when new: nothing to peek or pop, every size 0', () => {
    const queue = new PacedQueue<Entry>();
    expect(queue.peek()).toBeUndefined();
    expect(queue.pop()).toBeUndefined();
    expect([queue.size, queue.pacedSize, queue.available]).toEqual([0, 0, 0]);
    expect(queue.held).toBe(false);
  });

  it('offers the highest priority first across the two kinds', () => {
    const queue = queueOf(entry('w-low', 0), entry('r-high', 2), entry('w-mid', 1), entry('r-low', -1));
    expect(queue.peek()!.name).toBe('r-high');
    expect(popAll(queue)).toEqual(['r-high', 'w-mid', 'w-low', 'r-low']);
  });

  it('a paced task higher than an unpaced one comes first, whatever was pushed first', () => {
    expect(popAll(queueOf(entry('r', 0), entry('w', 0.5)))).toEqual(['w', 'r']);
    expect(popAll(queueOf(entry('w', 0.5), entry('r', 0)))).toEqual(['w', 'r']);
  });

  it('on equal priorities a paced task comes first, even one pushed after the unpaced one', () => {
    const queue = queueOf(entry('r1'), entry('w1'));
    expect(queue.peek()!.name).toBe('w1');
    expect(popAll(queue)).toEqual(['w1', 'r1']);
  });

  it('keeps insertion order within each kind at one priority', () => {
    const queue = queueOf(entry('r1'), entry('w1'), entry('r2'), entry('w2'), entry('r3'), entry('w3'));
    expect(popAll(queue)).toEqual(['w1', 'w2', 'w3', 'r1', 'r2', 'r3']);
  });

  it('while held offers only unpaced tasks, by priority then insertion order, and no paced one', () => {
    const queue = queueOf(entry('w-top', 9), entry('r1', 0), entry('r2', 1), entry('r3', 0));
    queue.held = true;
    expect(queue.peek()!.name).toBe('r2');
    expect(queue.available).toBe(3);
    expect(popAll(queue)).toEqual(['r2', 'r1', 'r3']);
    // Only the held paced task is left: nothing is offered, though the queue is not empty.
    expect(queue.peek()).toBeUndefined();
    expect([queue.size, queue.pacedSize, queue.available]).toEqual([1, 1, 0]);
    queue.held = false;
    expect(queue.available).toBe(1);
    expect(queue.pop()!.name).toBe('w-top');
  });

  it('held with only paced tasks offers nothing; released, they come out again', () => {
    const queue = queueOf(entry('w1'), entry('w2'));
    queue.held = true;
    expect(queue.pop()).toBeUndefined();
    expect(queue.size).toBe(2);
    queue.held = false;
    expect(popAll(queue)).toEqual(['w1', 'w2']);
  });

  it('counts both kinds in size, the paced ones in pacedSize, and what it may offer in available', () => {
    const queue = queueOf(entry('w1'), entry('r1'), entry('w2'), entry('r2'), entry('r3'));
    expect([queue.size, queue.pacedSize, queue.available]).toEqual([5, 2, 5]);
    queue.held = true;
    expect([queue.size, queue.pacedSize, queue.available]).toEqual([5, 2, 3]);
    queue.pop();
    expect([queue.size, queue.pacedSize, queue.available]).toEqual([4, 2, 2]);
    queue.held = false;
    queue.pop();
    expect([queue.size, queue.pacedSize, queue.available]).toEqual([3, 1, 3]);
  });

  it('removes an entry from its own kind only, and says whether it was queued', () => {
    const w1 = entry('w1');
    const r1 = entry('r1');
    const queue = queueOf(w1, r1, entry('w2'), entry('r2'));
    expect(queue.remove(w1)).toBe(true);
    expect(queue.remove(r1)).toBe(true);
    expect([queue.size, queue.pacedSize]).toEqual([2, 1]);
    // Already out: nothing else goes with it.
    expect(queue.remove(w1)).toBe(false);
    expect(queue.remove(entry('w-never'))).toBe(false);
    expect(queue.size).toBe(2);
    expect(popAll(queue)).toEqual(['w2', 'r2']);
  });

  it('remove finds a paced entry while held (held limits what comes out, not what is queued)', () => {
    const w1 = entry('w1');
    const queue = queueOf(w1, entry('r1'));
    queue.held = true;
    expect(queue.remove(w1)).toBe(true);
    expect([queue.size, queue.pacedSize]).toEqual([1, 0]);
  });

  it('clear hands back every entry of both kinds, held or not, and leaves it empty', () => {
    const queue = queueOf(entry('r1'), entry('w1', 3), entry('r2', 5), entry('w2'));
    queue.held = true;
    const cleared = queue.clear().map((e) => e.name);
    expect(cleared.sort()).toEqual(['r1', 'r2', 'w1', 'w2']);
    expect([queue.size, queue.pacedSize, queue.available]).toEqual([0, 0, 0]);
    queue.held = false;
    expect(queue.pop()).toBeUndefined();
  });

  it('peek offers what pop takes next, and does not take it', () => {
    const queue = queueOf(entry('r1', 1), entry('w1', 1), entry('r2', 2));
    for (const held of [false, true, false]) {
      queue.held = held;
      const next = queue.peek();
      expect(queue.peek()).toBe(next);
      expect(queue.pop()).toBe(next);
    }
    expect(queue.size).toBe(0);
  });
});
