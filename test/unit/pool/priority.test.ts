import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ExecutorPool } from '../../../lib/pool/index.js';
import { PriorityQueue } from '../../../lib/pool/priority-queue.js';

interface Entry {
  priority: number;
  seq: number;
  queueIndex: number;
}

describe('PriorityQueue', () => {
  it('pops highest priority first and FIFO among equals, also after arbitrary removals', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: -3, max: 3 }), fc.boolean()), { maxLength: 200 }),
        (spec) => {
          const queue = new PriorityQueue<Entry>();
          const entries = spec.map(([priority], seq) => ({ priority, seq, queueIndex: -1 }));
          for (const entry of entries) queue.push(entry, entry.seq + 0.25);
          const removed = entries.filter((_, i) => spec[i]![1]);
          for (const entry of removed) expect(queue.remove(entry)).toBe(true);
          for (const entry of removed) expect(queue.remove(entry)).toBe(false);
          const expected = entries
            .filter((_, i) => !spec[i]![1])
            .sort((a, b) => b.priority - a.priority || a.seq - b.seq);
          expect(queue.size).toBe(expected.length);
          const popped: Entry[] = [];
          for (let e = queue.pop(); e !== undefined; e = queue.pop()) {
            popped.push(e);
            expect(queue.poppedQueuedAt).toBe(e.seq + 0.25);
          }
          expect(popped).toEqual(expected);
        },
      ),
    );
  });

  it('gives back the time each entry was queued with, through compaction of removed and consumed slots', () => {
    const queue = new PriorityQueue<Entry>();
    const entries = Array.from({ length: 6000 }, (_, seq) => ({ priority: seq % 2, seq, queueIndex: -1 }));
    for (const entry of entries) queue.push(entry, entry.seq * 1.5);
    // Two thirds removed: the levels compact, renumbering what is left.
    for (const entry of entries) if (entry.seq % 3 !== 0) queue.remove(entry);
    const times: number[] = [];
    const expected: number[] = [];
    for (let e = queue.pop(); e !== undefined; e = queue.pop()) {
      times.push(queue.poppedQueuedAt);
      expected.push(e.seq * 1.5);
      // Pushed while popping: consumed slots are dropped as the heads move on.
      if (e.seq < 3000)
        queue.push({ priority: -1, seq: e.seq + 10_000, queueIndex: -1 }, (e.seq + 10_000) * 1.5);
    }
    expect(times).toEqual(expected);
    expect(times.length).toBe(2000 + 1000);
  });

  it('keeps working when pushes and pops interleave', () => {
    fc.assert(
      fc.property(
        fc.array(fc.option(fc.integer({ min: 0, max: 5 }), { nil: undefined }), { maxLength: 300 }),
        (ops) => {
          const queue = new PriorityQueue<Entry>();
          const model: Entry[] = [];
          let seq = 0;
          for (const op of ops) {
            if (op === undefined) {
              model.sort((a, b) => b.priority - a.priority || a.seq - b.seq);
              expect(queue.pop()).toBe(model.shift());
            } else {
              const entry = { priority: op, seq: seq++, queueIndex: -1 };
              queue.push(entry);
              model.push(entry);
            }
          }
          expect(queue.size).toBe(model.length);
        },
      ),
    );
  });

  it('keeps order and removals right across compactions (levels longer than 1024 entries)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 3000, max: 6000 }),
        fc.integer({ min: 0, max: 0x7fffffff }),
        (n, seed) => {
          let state = seed;
          const random = (below: number): number => {
            state = (state * 1103515245 + 12345) & 0x7fffffff;
            return state % below;
          };
          const byPriority = (a: Entry, b: Entry) => b.priority - a.priority || a.seq - b.seq;
          const queue = new PriorityQueue<Entry>();
          const model: Entry[] = [];
          let seq = 0;
          const push = (): void => {
            const entry = { priority: random(3), seq: seq++, queueIndex: -1 };
            queue.push(entry);
            model.push(entry);
            model.sort(byPriority);
          };
          for (let i = 0; i < n; i++) push();
          // Mostly pops, with a removal (of a queued entry, then of the same one again) and a push mixed in.
          for (let step = 0; model.length > 0; step++) {
            if (step % 5 === 0) {
              const victim = model.splice(random(model.length), 1)[0]!;
              expect(queue.remove(victim)).toBe(true);
              expect(queue.remove(victim)).toBe(false);
            } else if (step % 7 === 0 && seq < n * 1.2) {
              push();
            } else {
              expect(queue.pop()).toBe(model.shift());
            }
            expect(queue.size).toBe(model.length);
          }
          expect(queue.pop()).toBeUndefined();
        },
      ),
      { numRuns: 5 },
    );
  });
});

describe('ExecutorPool priority', () => {
  it('starts higher priority first, equal priorities in enqueue order', async () => {
    const pool = new ExecutorPool({ concurrency: 1, paused: true });
    const order: string[] = [];
    const specs: [string, number][] = [
      ['low-a', 1],
      ['high-a', 5],
      ['high-b', 5],
      ['mid', 3],
      ['high-c', 5],
      ['low-b', 1],
      ['default', 0],
      ['negative', -2],
    ];
    const done = specs.map(([name, priority]) =>
      pool.enqueue(
        async () => {
          order.push(name);
        },
        { priority },
      ),
    );
    pool.resume();
    await Promise.all(done);
    expect(order).toEqual(['high-a', 'high-b', 'high-c', 'mid', 'low-a', 'low-b', 'default', 'negative']);
  });

  it('lets a task enqueued later with higher priority overtake queued ones', async () => {
    const pool = new ExecutorPool({ concurrency: 1 });
    const order: string[] = [];
    let release!: () => void;
    const blocker = pool.enqueue(
      () =>
        new Promise<void>((resolve) => {
          release = resolve;
        }),
    );
    const queued = [
      pool.enqueue(async () => void order.push('normal-1')),
      pool.enqueue(async () => void order.push('normal-2')),
    ];
    const urgent = pool.enqueue(async () => void order.push('urgent'), { priority: 100 });
    release();
    await Promise.all([blocker, ...queued, urgent]);
    expect(order).toEqual(['urgent', 'normal-1', 'normal-2']);
  });
});
