import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { groupOf, LAYERS } from './layers.js';
import { findCycles, type ImportEdge, reachableByValue, readSourceGraph } from './source-graph.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const LAMBDA_ENTRY = 'functions/ingest.ts';
const EMULATORS = ['fauxqs', 'dynalite'];

const graph = readSourceGraph(ROOT, ['lib', 'functions', 'infra', 'bench', 'test', 'bin']);
const projectEdges = graph.edges.filter((edge): edge is ImportEdge & { to: string } => edge.to !== undefined);
type Dependencies = Record<string, string> | undefined;
const manifest = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as {
  dependencies?: Dependencies;
  peerDependencies?: Dependencies;
  devDependencies?: Dependencies;
};
// A package the Lambda may use is a dependency or a peer (installed next to it); a devDependency that is
// neither exists only on a developer's machine.
const runtime = new Set([
  ...Object.keys(manifest.dependencies ?? {}),
  ...Object.keys(manifest.peerDependencies ?? {}),
]);
const devOnly = Object.keys(manifest.devDependencies ?? {}).filter((name) => !runtime.has(name));

function show(edge: ImportEdge): string {
  return `${edge.from} -> ${edge.to ?? edge.pkg} (${edge.value ? 'value' : 'type'} import '${edge.specifier}')`;
}

describe('import graph', () => {
  it('reads the sources it checks (the scan itself works)', () => {
    expect(graph.files).toContain(LAMBDA_ENTRY);
    expect(graph.files).toContain('lib/local/index.ts');
    expect(projectEdges.some((edge) => edge.from === LAMBDA_ENTRY && edge.to.startsWith('lib/ingest/'))).toBe(
      true,
    );
  });

  it('places every source file in a layer', () => {
    const unplaced = graph.files.filter((file) => groupOf(file) === undefined);
    expect(unplaced, `add these to LAYERS in ${'test/unit/architecture/layers.ts'}`).toEqual([]);
  });

  it('has every import point down a layer (type imports included)', () => {
    const upOrSideways = projectEdges.filter((edge) => {
      const from = groupOf(edge.from);
      const to = groupOf(edge.to);
      if (from === undefined || to === undefined || from.group === to.group) return false;
      return to.rank >= from.rank;
    });
    const explained = upOrSideways.map((edge) => {
      const from = groupOf(edge.from)!;
      const to = groupOf(edge.to)!;
      return `${show(edge)}: ${from.group} (rank ${from.rank}) must not import ${to.group} (rank ${to.rank})`;
    });
    expect(explained, `layers, bottom to top: ${LAYERS.map((l) => l.group).join(' < ')}`).toEqual([]);
  });

  it('has no import cycle between files in lib/ (type imports included)', () => {
    const libEdges = projectEdges.filter(
      (edge) => edge.from.startsWith('lib/') && edge.to.startsWith('lib/'),
    );
    const cycles = findCycles(libEdges).map(
      (cycle) => `${cycle.path.join(' -> ')} (files in this circle: ${cycle.files.join(', ')})`,
    );
    expect(cycles).toEqual([]);
  });

  it(`bundles nothing local from the Lambda entry (${LAMBDA_ENTRY}): no lib/local, lib/cli, emulator or dev-only package`, () => {
    const bundled = reachableByValue(graph, LAMBDA_ENTRY);
    const isLocal = (file: string) => file.startsWith('lib/local/') || file.startsWith('lib/cli/');
    // The edges that cross into local code (or a package), not the imports inside lib/local they drag along.
    const offending = graph.edges
      .filter((edge) => edge.value && bundled.has(edge.from) && !isLocal(edge.from))
      .filter((edge) =>
        edge.to !== undefined
          ? isLocal(edge.to)
          : EMULATORS.includes(edge.pkg!) || devOnly.includes(edge.pkg!),
      )
      .map(show);
    expect(offending).toEqual([]);
  });
  it('reaches fauxqs only through the embedded stack, which puts S3 fidelity in front of it', () => {
    // A bare fauxqs ignores conditional writes and lists out of order: every S3 the project or a user gets
    // comes from startLocalAws (lib/local/emulators/local-aws.ts), and tests of that layer.
    const direct = graph.edges
      .filter((edge) => edge.pkg === 'fauxqs' && edge.value)
      .filter(
        (edge) =>
          edge.from !== 'lib/local/emulators/local-aws.ts' &&
          !edge.from.startsWith('test/unit/local/emulators/'),
      )
      .map(show);
    expect(direct).toEqual([]);
    expect(
      graph.edges.some((edge) => edge.pkg === 'fauxqs' && edge.from === 'lib/local/emulators/local-aws.ts'),
    ).toBe(true);
  });
});

describe('the checks themselves', () => {
  it('find a cycle and name its files in order', () => {
    const cycles = findCycles([
      { from: 'a', to: 'b' },
      { from: 'b', to: 'c' },
      { from: 'c', to: 'a' },
      { from: 'c', to: 'd' },
    ]);
    expect(cycles).toEqual([{ files: ['a', 'b', 'c'], path: ['a', 'b', 'c', 'a'] }]);
  });

  it('find no cycle in a graph that only points one way', () => {
    expect(
      findCycles([
        { from: 'a', to: 'b' },
        { from: 'a', to: 'c' },
        { from: 'b', to: 'c' },
      ]),
    ).toEqual([]);
  });

  it('place a file in its most specific layer', () => {
    expect(groupOf('lib/local/emulators/local-aws.ts')?.group).toBe('lib/local');
    expect(groupOf('lib/index.ts')?.group).toBe('lib/index.ts');
    expect(groupOf('lib/ingest/handler/ingest-handler.ts')?.rank).toBeLessThan(
      groupOf('lib/local/index.ts')!.rank,
    );
    expect(groupOf('vitest.config.mts')).toBeUndefined();
  });

  it('put lib/backoff at the bottom beside lib/errors: pool, semaphore, db and ingest may import it, it imports nothing of lib', () => {
    const backoff = groupOf('lib/backoff/backoff.ts')!;
    expect(backoff).toMatchObject({ group: 'lib/backoff', rank: groupOf('lib/errors/index.ts')!.rank });
    for (const user of ['lib/pool/x.ts', 'lib/semaphore/x.ts', 'lib/db/x.ts', 'lib/ingest/x.ts']) {
      expect(groupOf(user)!.rank).toBeGreaterThan(backoff.rank);
    }
    const fromBackoff = projectEdges.filter((edge) => groupOf(edge.from)?.group === 'lib/backoff');
    expect(fromBackoff.filter((edge) => groupOf(edge.to)?.group !== 'lib/backoff').map(show)).toEqual([]);
  });
});
