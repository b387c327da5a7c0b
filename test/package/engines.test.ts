import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

// `engines` tells the truth: every Node the package claims satisfies every package `npm ci` installs (so
// `npm ci` on the stated minimum prints no engine warning), and the README states that minimum.

const ROOT = join(import.meta.dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version?: string; engines?: unknown }>;
};

/** `node` ranges of the locked packages that state one (some old packages use an array: not a range). */
function lockedNodeRanges(): Array<{ name: string; range: string }> {
  return Object.entries(lock.packages).flatMap(([path, entry]) => {
    const engines = entry.engines as { node?: unknown } | undefined;
    const range = engines?.node;
    if (path === '' || typeof range !== 'string') return [];
    return [{ name: `${path.replace(/^.*node_modules\//, '')}@${entry.version}`, range }];
  });
}

describe('engines', () => {
  it("the package's Node range lies inside every installed package's", () => {
    const claimed = pkg.engines.node;
    expect(semver.validRange(claimed)).not.toBeNull();
    const ranges = lockedNodeRanges();
    expect(ranges.length).toBeGreaterThan(10);
    const outside = ranges
      .filter(({ range }) => !semver.subset(claimed, range))
      .map((r) => `${r.name} (${r.range})`);
    expect(outside, `engines.node ${claimed} allows a Node these packages refuse`).toEqual([]);
  });

  it("is not wider than it must be: its minimum is some installed package's minimum", () => {
    const minimum = semver.minVersion(pkg.engines.node)!.version;
    const minimums = lockedNodeRanges().map(({ range }) => semver.minVersion(range)?.version);
    expect(minimums).toContain(minimum);
  });

  it('the README states the same minimum', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const minimum = semver.minVersion(pkg.engines.node)!;
    expect(readme).toContain(`Node.js ${minimum.major}.${minimum.minor}+`);
  });
});
