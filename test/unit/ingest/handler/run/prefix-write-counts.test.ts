import { describe, expect, it } from 'vitest';
import { tenantPrefix } from '../../../../../lib/db/keys.js';
import { PrefixWriteCounts } from '../../../../../lib/ingest/handler/run/prefix-write-counts.js';

describe('PrefixWriteCounts', () => {
  it("counts a watched tenant prefix's writes only, from watch to stop", () => {
    const counts = new PrefixWriteCounts();
    counts.count('t=hot/r=items/a.json'); // before the watch
    const hot = counts.watch(tenantPrefix('hot'));
    counts.count('t=hot/r=items/a.json');
    counts.count('t=hot/r=items/b.json');
    counts.count('t=cold/r=items/a.json');
    counts.count('t=hotter/r=items/a.json'); // a longer tenant name is another prefix
    expect(hot.count).toBe(2);
    hot.stop();
    counts.count('t=hot/r=items/c.json');
    expect(hot.count).toBe(2);
  });

  it('gives each watch of the same prefix its own count and forgets a prefix nobody watches', () => {
    const counts = new PrefixWriteCounts();
    const first = counts.watch('t=a/');
    counts.count('t=a/x');
    const second = counts.watch('t=a/');
    counts.count('t=a/y');
    expect([first.count, second.count]).toEqual([2, 1]);
    first.stop();
    first.stop();
    expect(counts.watching).toBe(1);
    counts.count('t=a/z');
    expect([first.count, second.count]).toEqual([2, 2]);
    second.stop();
    expect(counts.watching).toBe(0);
    // Stopping again once the prefix is forgotten is still a no-op.
    expect(() => second.stop()).not.toThrow();
    expect(second.count).toBe(2);
  });
});
