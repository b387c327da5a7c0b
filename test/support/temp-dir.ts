// Temporary directories for tests, each removed with its contents when the test or test file that made it
// ends, passed or failed: a test run leaves nothing behind in the OS's temp directory.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, onTestFinished } from 'vitest';

function makeDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `s3-ingest-${prefix}-`));
}

function remover(dir: string): () => void {
  return () => rmSync(dir, { recursive: true, force: true });
}

/** A fresh directory, removed when the running test finishes. Call it inside a test. */
export function testTempDir(prefix: string): string {
  const dir = makeDir(prefix);
  onTestFinished(remover(dir));
  return dir;
}

/** A fresh directory for a whole test file, removed after its last test. Call it at the file's top level. */
export function fileTempDir(prefix: string): string {
  const dir = makeDir(prefix);
  afterAll(remover(dir));
  return dir;
}

/**
 * Fresh directories for a whole test file, one per call of the returned function, all removed after its last
 * test. Call it at the file's top level.
 */
export function fileTempDirs(prefix: string): () => string {
  const root = fileTempDir(prefix);
  let made = 0;
  return () => {
    made += 1;
    const dir = join(root, String(made));
    mkdirSync(dir);
    return dir;
  };
}
