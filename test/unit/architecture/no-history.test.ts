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

  it('finds an issue number, "used to", a bench run told as a story, work rounds, reviews and briefs on planted lines', () => {
    const planted = [
      '## Adaptive limits (issue 16); see issues #19.',
      'A rest used to outlive it; the value is used to derive an id.',
      'Shrinking held it at 38% (bench:load: a hot prefix at 29-45 of 50 writes/s), (bench:load, 30 s: 6 of 28).',
      'bench:load limit-bound saw leases granted late; Measured why: gaps. Cost in bench:load after the halving.',
      "bench:load's hot prefix ran slowly; `npm run bench:db` measures each step (bench:db, lib/db/README.md).",
      'What changed against the previous round; defined in this round.',
      "Found in the attacker's review, as the issue asks, option (b) of the brief.",
      'Before the fix, a redrive moves each letter once; before the change it was slower.',
    ].join('\n');
    expect(findHistoryMarkers('planted.ts', planted).map(show)).toEqual([
      'planted.ts:1: issue number: issue 16',
      'planted.ts:1: issue number: issues #19',
      'planted.ts:2: used to: used to outlive',
      'planted.ts:3: bench run log: (bench:load:',
      'planted.ts:3: bench run log: (bench:load, 3',
      'planted.ts:4: bench run log: bench:load limit-bound saw',
      'planted.ts:4: bench run log: Measured why',
      'planted.ts:4: bench run log: in bench:load',
      "planted.ts:5: bench run log: bench:load's hot",
      'planted.ts:6: work round: What changed against',
      'planted.ts:6: work round: previous round',
      'planted.ts:6: work round: in this round',
      "planted.ts:7: review as history: attacker's review",
      'planted.ts:7: task brief: the issue asks',
      'planted.ts:7: task brief: of the brief',
      'planted.ts:8: before this change: before the change',
    ]);
  });

  it('finds none in the product prose and code', () => {
    const markers = files.flatMap((file) => findHistoryMarkers(file, readFileSync(join(ROOT, file), 'utf8')));
    expect(markers.map(show)).toEqual([]);
  });
});
