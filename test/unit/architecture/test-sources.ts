import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Every TypeScript and JavaScript file under `dir`, at any depth. */
export function testSources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testSources(path);
    return /\.(ts|mts|js|mjs)$/.test(entry.name) ? [path] : [];
  });
}
