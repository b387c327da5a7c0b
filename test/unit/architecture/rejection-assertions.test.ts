import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { testSources } from './test-sources.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const TEST_DIR = join(ROOT, 'test');

/**
 * On `rejects`, `toThrow` with a string, a regex or nothing, and `toThrowError` with a string, all pass
 * when the promise rejects with `undefined` (vitest 5), so they assert nothing about what failed.
 * The class form, `rejects.toThrow(SomeError)`, does fail then and is allowed.
 */
const REJECTION = /\.rejects\s*\.\s*(toThrow|toThrowError)\s*\(\s*([A-Z][\w.]*\s*,?\s*\))?/g;

const INSTEAD =
  "assert the rejection by what it is: `await expect(p).rejects.toMatchObject({ name: 'RangeError', " +
  "message: expect.stringContaining('...') })` or `await expect(p).rejects.toBeInstanceOf(RangeError)`";

/** The `file:line: form` of every string, regex or empty `toThrow` on `rejects` in `source`. */
function weakRejections(file: string, source: string): string[] {
  const found: string[] = [];
  for (const match of source.matchAll(REJECTION)) {
    if (match[2] !== undefined) continue;
    const line = source.slice(0, match.index).split('\n').length;
    const end = source.indexOf(';', match.index);
    const form = source.slice(match.index, end === -1 ? undefined : end + 1).replace(/\s+/g, ' ');
    found.push(`${file}:${line}: ${form}`);
  }
  return found;
}

describe('rejection assertions in test/', () => {
  it('finds the string, regex and empty forms, one line or several, and lets the class form through', () => {
    // Built from `R` so that text searches for the weak forms do not find this file's own examples.
    const R = 'rejects.';
    const planted = [
      `await expect(p).${R}toThrow('cutoff');`,
      `await expect(p).${R}toThrow(/cut ?off/);`,
      `await expect(p).${R}toThrow();`,
      `await expect(p).${R}toThrowError(\`cutoff\`);`,
      'await expect(p)\n  .rejects\n  .toThrow(\n    "cutoff",\n  );',
      `await expect(p).${R}toThrow(RangeError);`,
      `await expect(p).${R}toThrow(\n  ValidationError,\n);`,
      "await expect(p).rejects.toMatchObject({ name: 'Error', message: 'cutoff' });",
    ].join('\n');
    expect(weakRejections('planted.test.ts', planted)).toEqual([
      `planted.test.ts:1: .${R}toThrow('cutoff');`,
      `planted.test.ts:2: .${R}toThrow(/cut ?off/);`,
      `planted.test.ts:3: .${R}toThrow();`,
      `planted.test.ts:4: .${R}toThrowError(\`cutoff\`);`,
      'planted.test.ts:6: .rejects .toThrow( "cutoff", );',
    ]);
  });

  it('holds none: every rejection is asserted by what it is', () => {
    const sources = testSources(TEST_DIR);
    expect(sources.length).toBeGreaterThan(100);
    const self = fileURLToPath(import.meta.url);
    const weak = sources
      .filter((path) => path !== self)
      .flatMap((path) => weakRejections(relative(ROOT, path), readFileSync(path, 'utf8')));
    expect(weak, `${weak.join('\n')}\n${INSTEAD}`).toEqual([]);
  });
});
