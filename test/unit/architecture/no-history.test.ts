import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { findHistoryMarkers, type HistoryMarker } from './history-markers.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SCANNED = ['README.md', 'docs', 'lib', 'infra', 'functions'];
const TEXT = /\.(?:md|ts|mts|cts|js|mjs|json)$/;

function filesUnder(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path).flatMap((name) => filesUnder(join(path, name)));
}

const files = SCANNED.flatMap((entry) => filesUnder(join(ROOT, entry)))
  .filter((path) => TEXT.test(path))
  .map((path) => relative(ROOT, path));

const show = (m: HistoryMarker) => `${m.file}:${m.line}: ${m.rule}: ${m.text}`;

describe('no work-log history in README, docs, lib, infra, functions', () => {
  it('scans the files it is meant to', () => {
    expect(files).toContain('README.md');
    expect(files).toContain('docs/benchmarks.md');
    expect(files).toContain('lib/index.ts');
    expect(files).toContain('infra/app.ts');
    expect(files.length).toBeGreaterThan(100);
  });

  it('finds a commit hash, a session, a UTC window and a dated run on planted lines, naming file:line', () => {
    const planted = [
      'The grid ran on 4c73ff3 with the old code.',
      'Session 11 measured it again; this session changed nothing.',
      'Run 2026-12-01 08:25 - 08:36 UTC on a quiet machine.',
      'Run of 2026-11-30, load 20; before this change it was slower.',
      'An id of 9007199254740993, a digest 8f9f5e608b854a4039366d9f511867b9 and the word "defaced" pass.',
    ].join('\n');
    expect(findHistoryMarkers('planted.md', planted).map(show)).toEqual([
      'planted.md:1: commit hash: 4c73ff3',
      'planted.md:2: work session: Session 11',
      'planted.md:2: work session: this session',
      'planted.md:3: UTC run window: 08:25 - 08:36 UTC',
      'planted.md:4: before this change: before this change',
      'planted.md:4: dated run: Run of 2026-11-30',
    ]);
  });

  it('finds none in the product prose and code', () => {
    const markers = files.flatMap((file) => findHistoryMarkers(file, readFileSync(join(ROOT, file), 'utf8')));
    expect(markers.map(show)).toEqual([]);
  });
});
