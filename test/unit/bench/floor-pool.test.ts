import { describe, expect, it } from 'vitest';
import { FloorPool } from '../../../bench/pool/floor-pool.js';

/** A task whose work the test finishes by hand. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open = (): void => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

describe('FloorPool (the floor bench:pool-closure compares the pool with)', () => {
  it('runs at most `concurrency` tasks and starts queued ones highest priority first, FIFO among equals', async () => {
    const pool = new FloorPool(2);
    const started: string[] = [];
    const gates = new Map<string, ReturnType<typeof gate>>();
    const task = (name: string) => () => {
      started.push(name);
      const g = gate();
      gates.set(name, g);
      return g.promise.then(() => name);
    };
    const results = [
      pool.enqueue(task('a'), 0),
      pool.enqueue(task('b'), 0),
      pool.enqueue(task('low'), 1),
      pool.enqueue(task('high-1'), 9),
      pool.enqueue(task('mid'), 5),
      pool.enqueue(task('high-2'), 9),
    ];
    expect(started).toEqual(['a', 'b']);
    gates.get('a')!.open();
    await results[0];
    expect(started).toEqual(['a', 'b', 'high-1']);
    for (const name of ['b', 'high-1', 'high-2', 'mid']) {
      gates.get(name)!.open();
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(started).toEqual(['a', 'b', 'high-1', 'high-2', 'mid', 'low']);
    gates.get('low')!.open();
    await expect(Promise.all(results)).resolves.toEqual(['a', 'b', 'low', 'high-1', 'mid', 'high-2']);
  });

  it("rejects a task's promise with its error and goes on with the queue", async () => {
    const pool = new FloorPool(1);
    const boom = new Error('boom');
    const failing = pool.enqueue(() => Promise.reject(boom), 0);
    const next = pool.enqueue(() => Promise.resolve(7), 0);
    await expect(failing).rejects.toBe(boom);
    await expect(next).resolves.toBe(7);
  });
});
