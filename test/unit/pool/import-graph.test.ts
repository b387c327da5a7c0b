import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const poolDir = join(root, 'lib/pool');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every relative import and re-export of `file`, type-only ones included, as absolute .ts paths. */
function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return importedFiles
    .map((imported) => imported.fileName)
    .filter((name) => name.startsWith('.'))
    .map((name) => resolve(dirname(file), name.replace(/\.js$/, '.ts')));
}

/** The cycles in `graph`, each as the list of files around it (Tarjan's strongly connected components). */
function cycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (node: string): void => {
    index.set(node, next);
    low.set(node, next);
    next += 1;
    stack.push(node);
    onStack.add(node);
    for (const target of graph.get(node) ?? []) {
      if (!graph.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node)!, low.get(target)!));
      } else if (onStack.has(target)) {
        low.set(node, Math.min(low.get(node)!, index.get(target)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      const selfLoop = graph.get(node)?.includes(node) ?? false;
      if (component.length > 1 || selfLoop) found.push(component);
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

describe('lib/pool import graph', () => {
  const files = sourceFiles(poolDir);
  const graph = new Map(files.map((file) => [file, importsOf(file)]));

  it('has no cycle, type-only imports included', () => {
    const named = cycles(graph).map((component) => component.map((file) => relative(root, file)).sort());
    expect(named).toEqual([]);
  });

  it('the cycle check finds a cycle when there is one', () => {
    const a = join(poolDir, 'a.ts');
    const b = join(poolDir, 'b.ts');
    expect(
      cycles(
        new Map([
          [a, [b]],
          [b, [a]],
        ]),
      ),
    ).toHaveLength(1);
  });

  it('imports only lib/pool itself and lib/errors (the layer below)', () => {
    const outside = files.flatMap((file) =>
      importsOf(file)
        .filter((target) => !target.startsWith(poolDir) && !target.startsWith(join(root, 'lib/errors')))
        .map((target) => `${relative(root, file)} -> ${relative(root, target)}`),
    );
    expect(outside).toEqual([]);
  });
});
