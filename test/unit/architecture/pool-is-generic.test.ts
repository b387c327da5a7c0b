import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// lib/pool is a generic executor: what a throttled answer is, which rate a service documents and how its
// keys are laid out belong to the service that composes the pool (lib/db), never to the pool.
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const POOL = join(ROOT, 'lib/pool');
/** S3 by name (upper case: the package name `s3-ingest` is not a mention), its throttle error, its key prefixes. */
const SERVICE_WORDS = /\bS3\b|slowdown|prefix/gi;
const CASE_SENSITIVE_S3 = /^S3$/;

/** Every service word in `text`, as `file:line: word`. */
function serviceMentions(file: string, text: string): string[] {
  const found: string[] = [];
  text.split('\n').forEach((line, index) => {
    for (const match of line.matchAll(SERVICE_WORDS)) {
      const word = match[0];
      if (/^s3$/i.test(word) && !CASE_SENSITIVE_S3.test(word)) continue;
      found.push(`${file}:${index + 1}: ${word}`);
    }
  });
  return found;
}

const files = readdirSync(POOL, { recursive: true, encoding: 'utf8' })
  .filter((name) => /\.(?:ts|md)$/.test(name))
  .map((name) => relative(ROOT, join(POOL, name)))
  .sort();

describe('lib/pool knows nothing of S3', () => {
  it('scans every source file and the README of lib/pool, autotune included', () => {
    expect(files).toContain('lib/pool/executor-pool.ts');
    expect(files).toContain('lib/pool/README.md');
    expect(files).toContain('lib/pool/autotune/throttle-rate-limit.ts');
    expect(files.length).toBeGreaterThan(20);
  });

  it('finds S3, SlowDown and prefixes on planted lines, naming file:line, and passes the package name', () => {
    const planted = [
      "import { ExecutorPool } from 's3-ingest'; // the package name is no mention",
      "S3's limit per prefix; a SlowDown, a slowdown or a Prefix; to slow down is plain English.",
      'S3IngestError is the base class; a throttled answer cuts the rate.',
    ].join('\n');
    expect(serviceMentions('planted.ts', planted)).toEqual([
      'planted.ts:2: S3',
      'planted.ts:2: prefix',
      'planted.ts:2: SlowDown',
      'planted.ts:2: slowdown',
      'planted.ts:2: Prefix',
    ]);
  });

  it('no lib/pool file mentions S3, SlowDown or prefixes: the service that composes the pool supplies them', () => {
    const mentions = files.flatMap((file) => serviceMentions(file, readFileSync(join(ROOT, file), 'utf8')));
    expect(mentions).toEqual([]);
  });
});
