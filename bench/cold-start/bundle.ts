import { statSync } from 'node:fs';
import { join } from 'node:path';
import { build, type Metafile } from 'esbuild';

const ROOT = join(import.meta.dirname, '..', '..');

/** The built Lambda bundle and what esbuild says went into it. */
export interface LambdaBundle {
  /** The bundle's path (`index.mjs`), its source map beside it. */
  readonly path: string;
  readonly bytes: number;
  readonly metafile: Metafile;
}

/**
 * Builds functions/ingest.ts the way infra/ingest-stack.ts has CDK build it (esbuild, ESM, node24, module-first
 * resolution, the SDK bundled, minified, an external source map, the `require` banner), into `outdir`.
 */
export async function buildLambdaBundle(outdir: string): Promise<LambdaBundle> {
  const path = join(outdir, 'index.mjs');
  const result = await build({
    entryPoints: [join(ROOT, 'functions', 'ingest.ts')],
    absWorkingDir: ROOT,
    outfile: path,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    mainFields: ['module', 'main'],
    banner: {
      js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
    },
    minify: true,
    sourcemap: true,
    sourcesContent: false,
    metafile: true,
    logLevel: 'warning',
  });
  return { path, bytes: statSync(path).size, metafile: result.metafile };
}

/** `node_modules/@scope/name/x.js` -> `@scope/name`; the repo's own sources -> `(s3-ingest)`. */
export function packageOfInput(input: string): string {
  const at = input.lastIndexOf('node_modules/');
  if (at < 0) return '(s3-ingest)';
  const parts = input.slice(at + 'node_modules/'.length).split('/');
  return parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1]}` : (parts[0] ?? input);
}

/** Bytes each package contributes to the output, largest first. */
export function bytesByPackage(metafile: Metafile): Array<{ package: string; bytes: number; files: number }> {
  const totals = new Map<string, { bytes: number; files: number }>();
  for (const output of Object.values(metafile.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
      const name = packageOfInput(input);
      const total = totals.get(name) ?? { bytes: 0, files: 0 };
      total.bytes += bytesInOutput;
      total.files += 1;
      totals.set(name, total);
    }
  }
  return [...totals].map(([name, t]) => ({ package: name, ...t })).sort((a, b) => b.bytes - a.bytes);
}

/** The `n` inputs that put the most bytes into the output. */
export function largestInputs(metafile: Metafile, n: number): Array<{ input: string; bytes: number }> {
  const rows: Array<{ input: string; bytes: number }> = [];
  for (const output of Object.values(metafile.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs))
      rows.push({ input, bytes: bytesInOutput });
  }
  return rows.sort((a, b) => b.bytes - a.bytes).slice(0, n);
}
