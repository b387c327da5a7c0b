import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { testSources } from './test-sources.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const TEST_DIR = join(ROOT, 'test');
const SELF = relative(ROOT, fileURLToPath(import.meta.url));

/**
 * Writing under the OS's temp directory with no removal in the same file leaves something behind on every
 * run (on CI and on a developer's machine). test/support/temp-dir.ts makes directories that remove
 * themselves; a file that makes its own must remove it.
 */
function leavesTempFiles(source: string): boolean {
  return /\btmpdir\(\)/.test(source) && !/\brmSync\(|\brm\(|\bunlinkSync\(/.test(source);
}

/** A CDK `App` (infra/build-app.ts) built with no `outdir` makes a `cdk.out*` directory under the OS's temp directory. */
function buildsAppWithoutOutdir(source: string): boolean {
  return /infra\/build-app\.js'/.test(source) && /\bbuildApp\(\{/.test(source) && !/\boutdir\b/.test(source);
}

describe('temporary files made by tests', () => {
  it('tells a file that writes under tmpdir() and never removes from one that does', () => {
    const T = 'tmpdir';
    expect(leavesTempFiles(`const dir = mkdtempSync(join(${T}(), 'x-'));`)).toBe(true);
    expect(
      leavesTempFiles(`const dir = mkdtempSync(join(${T}(), 'x-'));\nrmSync(dir, { recursive: true });`),
    ).toBe(false);
    expect(leavesTempFiles("const dir = testTempDir('x');")).toBe(false);
    const infra = "import { buildApp } from '../../infra/build-app.js';\n";
    expect(buildsAppWithoutOutdir(`${infra}return buildApp({ envName });`)).toBe(true);
    expect(buildsAppWithoutOutdir(`${infra}return buildApp({ envName, outdir: appOutdir() });`)).toBe(false);
    // fauxqs has a buildApp of its own (a Fastify app), which writes nothing.
    expect(buildsAppWithoutOutdir("import { buildApp } from 'fauxqs';\nbuildApp({ logger: false });")).toBe(
      false,
    );
  });

  it('are all removed by the file that makes them', () => {
    const offenders = testSources(TEST_DIR)
      .map((path) => relative(ROOT, path))
      .filter((path) => path !== SELF)
      .filter((path) => {
        const source = readFileSync(join(ROOT, path), 'utf8');
        return leavesTempFiles(source) || buildsAppWithoutOutdir(source);
      });
    expect(offenders, 'make them with test/support/temp-dir.ts (or remove them in the same file)').toEqual(
      [],
    );
  });
});
