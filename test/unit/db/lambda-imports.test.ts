import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
/** What the Lambda bundles: none of it may import local tooling (emulators, behaviour model, chaos proxy). */
const LAMBDA_CODE = ['lib/db', 'lib/ingest', 'lib/pool', 'lib/semaphore', 'lib/errors', 'functions'];
const IMPORT = /(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

function sources(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => join(e.parentPath, e.name));
}

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(IMPORT)].map((m) => (m[1] ?? m[2])!);
}

describe('layering', () => {
  it('the import scanner sees relative imports (guards against a regex that matches nothing)', () => {
    const all = sources('lib/db').flatMap(importsOf);
    expect(all).toContain('./keys.js');
  });

  it('no Lambda code imports from lib/local', () => {
    const offenders: string[] = [];
    for (const dir of LAMBDA_CODE) {
      for (const file of sources(dir)) {
        for (const spec of importsOf(file)) {
          if (!spec.startsWith('.')) continue;
          const target = relative(root, resolve(dirname(file), spec));
          if (target === 'lib/local' || target.startsWith('lib/local/')) {
            offenders.push(`${relative(root, file)} -> ${spec}`);
          }
        }
      }
    }
    expect(offenders).toEqual([]);
  });
});
