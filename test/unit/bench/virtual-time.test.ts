import { afterEach, describe, expect, it } from 'vitest';
import { VirtualTime } from '../../../bench/throttle/virtual-time.js';
import { seededRandom } from '../../../lib/local/s3-behaviour/seeded-random.js';

// install() replaces these globals; each test puts them back.
const realSetTimeout = globalThis.setTimeout;
const realClearTimeout = globalThis.clearTimeout;
const realDateNow = Date.now;
const realPerformanceNow = performance.now;

afterEach(() => {
  globalThis.setTimeout = realSetTimeout;
  globalThis.clearTimeout = realClearTimeout;
  Date.now = realDateNow;
  Object.defineProperty(performance, 'now', {
    value: realPerformanceNow,
    configurable: true,
    writable: true,
  });
});

describe('VirtualTime', () => {
  it('sweeps cleared timers out of its heap instead of keeping them (and what they reach) until they are due', () => {
    const time = new VirtualTime(0);
    time.install();
    const handles = Array.from({ length: 10_000 }, (_, i) => setTimeout(() => i, 60_000));
    for (const handle of handles) clearTimeout(handle);
    // Cleared timers are swept once they are 4,096 and half of the heap: at most that many remain.
    expect(time.queuedTimers).toBeLessThan(4096);
    const kept = setTimeout(() => {}, 1);
    expect(time.queuedTimers).toBeLessThan(4097);
    clearTimeout(kept);
  });

  it('fires the timers not cleared in (due time, creation) order, whatever was cleared and swept', async () => {
    const time = new VirtualTime(0);
    time.install();
    const random = seededRandom(7);
    const fired: number[] = [];
    const expected: Array<{ at: number; id: number }> = [];
    const handles: Array<ReturnType<typeof setTimeout>> = [];
    // 20,000 timers on a few distinct due times (ties are ordered by creation), three in five cleared in a
    // shuffled order: enough to sweep several times.
    for (let id = 0; id < 20_000; id++) {
      const at = Math.floor(random() * 50) * 10;
      handles.push(setTimeout(() => fired.push(id), at));
      expected.push({ at, id });
    }
    const cleared = new Set<number>();
    for (let id = 0; id < 20_000; id++) if (random() < 0.6) cleared.add(id);
    const order = [...cleared].sort(() => random() - 0.5);
    for (const id of order) clearTimeout(handles[id]);
    // Clearing twice, or a timer that already fired, changes nothing.
    for (const id of order.slice(0, 100)) clearTimeout(handles[id]);
    await time.run();
    const want = expected
      .filter((t) => !cleared.has(t.id))
      .sort((a, b) => a.at - b.at || a.id - b.id)
      .map((t) => t.id);
    expect(fired).toEqual(want);
    expect(time.queuedTimers).toBe(0);
    for (const handle of handles) clearTimeout(handle);
    expect(time.queuedTimers).toBe(0);
  });

  it('keeps the order of timers set and cleared from inside callbacks', async () => {
    const time = new VirtualTime(0);
    time.install();
    const log: string[] = [];
    const later = setTimeout(() => log.push('later (cleared)'), 30);
    setTimeout(() => {
      log.push(`a@${performance.now()}`);
      clearTimeout(later);
      setTimeout(() => log.push(`c@${performance.now()}`), 5);
    }, 10);
    setTimeout(() => log.push(`b@${performance.now()}`), 10);
    await time.run();
    expect(log).toEqual(['a@10', 'b@10', 'c@15']);
  });
});
