import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { build, type Metafile } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';

// The Lambda bundle holds only what the function runs. Bundled here the way infra/ingest-stack.ts bundles it
// (esbuild, ESM, node platform, module-first resolution, the SDK bundled), then every input is checked.

const ROOT = join(import.meta.dirname, '..', '..');

interface PackageJson {
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

function readPackage(dir: string): PackageJson {
  return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as PackageJson;
}

/** Every package reachable from the root's runtime dependencies (dependencies + peers), walking node_modules. */
function runtimeClosure(root: PackageJson): Set<string> {
  const seen = new Set<string>();
  const pending = [...Object.keys(root.dependencies ?? {}), ...Object.keys(root.peerDependencies ?? {})];
  while (pending.length > 0) {
    const name = pending.pop() as string;
    if (seen.has(name)) continue;
    seen.add(name);
    let pkg: PackageJson;
    try {
      pkg = readPackage(join(ROOT, 'node_modules', name));
    } catch {
      continue; // an optional peer not installed here
    }
    pending.push(...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.optionalDependencies ?? {}));
  }
  return seen;
}

/** `node_modules/@scope/name/x.js` -> `@scope/name`; sources of the repo -> undefined. */
function packageOf(input: string): string | undefined {
  const at = input.lastIndexOf('node_modules/');
  if (at < 0) return undefined;
  const parts = input.slice(at + 'node_modules/'.length).split('/');
  return parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
}

/** The directories a package is installed in, as the bundle's inputs or the lockfile's entries name them. */
function installDirs(paths: readonly string[], name: string): string[] {
  const marker = `node_modules/${name}`;
  const dirs = paths
    .map((path) =>
      path.indexOf(`${marker}/`) >= 0 || path.endsWith(marker)
        ? path.slice(0, path.lastIndexOf(marker) + marker.length)
        : undefined,
    )
    .filter((dir): dir is string => dir !== undefined);
  return [...new Set(dirs)].sort();
}

const COMMONS = '@aws-lambda-powertools/commons';

describe('the Lambda bundle (functions/ingest.ts)', () => {
  let inputs: string[];
  beforeAll(async () => {
    const result = await build({
      entryPoints: [join(ROOT, 'functions', 'ingest.ts')],
      absWorkingDir: ROOT,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node24',
      mainFields: ['module', 'main'],
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    inputs = Object.keys((result.metafile as Metafile).inputs);
  });

  it('contains the handler and none of the local tooling', () => {
    expect(inputs).toContain('lib/ingest/handler/ingest-handler.ts');
    const local = inputs.filter((file) => file.startsWith('lib/local/') || file.startsWith('lib/cli'));
    expect(local).toEqual([]);
  });

  it('carries the pool the handler builds and none of the companions it does not compose', () => {
    // The handler's pools use a budget, retries, timeouts and pacing: no circuit breaker, no
    // deduplication, no autotuner, no bulk `processWithPool`.
    expect(inputs).toContain('lib/pool/executor-pool.ts');
    const unused = inputs.filter(
      (file) =>
        file.startsWith('lib/pool/autotune/') ||
        ['lib/pool/circuit-breaker.ts', 'lib/pool/dedup.ts', 'lib/pool/process.ts'].includes(file),
    );
    expect(unused).toEqual([]);
  });

  it('holds one copy of Powertools commons, shared by the logger and the metrics', () => {
    // Two copies double commons' module evaluation at cold start and split its state (cold-start flag).
    expect(installDirs(inputs, COMMONS)).toEqual([`node_modules/${COMMONS}`]);
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, unknown>;
    };
    expect(installDirs(Object.keys(lock.packages), COMMONS)).toEqual([`node_modules/${COMMONS}`]);
  });

  it('contains no emulator and no package outside the runtime dependencies', () => {
    const root = readPackage(ROOT);
    const runtime = runtimeClosure(root);
    const bundled = new Set(inputs.map(packageOf).filter((name): name is string => name !== undefined));
    expect(bundled.size).toBeGreaterThan(0);
    const foreign = [...bundled].filter((name) => !runtime.has(name)).sort();
    expect(foreign).toEqual([]);
    for (const emulator of ['fauxqs', 'dynalite']) expect(bundled.has(emulator)).toBe(false);
  });
});
