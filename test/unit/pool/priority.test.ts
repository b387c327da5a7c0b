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
          for (const entry of entries) queue.push(entry);
          const removed = entries.filter((_, i) => spec[i]![1]);
          for (const entry of removed) expect(queue.remove(entry)).toBe(true);
          for (const entry of removed) expect(queue.remove(entry)).toBe(false);
          const expected = entries
            .filter((_, i) => !spec[i]![1])
            .sort((a, b) => b.priority - a.priority || a.seq - b.seq);
          expect(queue.size).toBe(expected.length);
          const popped: Entry[] = [];
          for (let e = queue.pop(); e !== undefined; e = queue.pop()) popped.push(e);
          expect(popped).toEqual(expected);
        },
      ),
    );
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
