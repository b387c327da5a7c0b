import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import ts from 'typescript';

/** One import, export-from or dynamic `import()` in a source file. */
export interface ImportEdge {
  /** The importing file, relative to the repository root with `/` separators. */
  from: string;
  /** The imported project file (relative to the root), or `undefined` for a package. */
  to: string | undefined;
  /** The package name for a bare specifier (`@aws-sdk/client-s3`, `fauxqs`), else `undefined`. */
  pkg: string | undefined;
  /** The specifier as written. */
  specifier: string;
  /**
   * `false` only for `import type` / `export type`: those are erased, so they never reach a bundle.
   * `import { type A } from 'x'` counts as a value import: under `verbatimModuleSyntax` it is emitted as
   * `import {} from 'x'`, which still loads the module.
   */
  value: boolean;
}

export interface SourceGraph {
  /** Every scanned file, relative to the root. */
  files: string[];
  edges: ImportEdge[];
}

const SOURCE = /\.(ts|mts|js|mjs)$/;
const builtins = new Set(builtinModules);

/** Reads the import statements of every TypeScript/JavaScript file under `roots` (relative to `rootDir`). */
export function readSourceGraph(rootDir: string, roots: string[]): SourceGraph {
  const files = roots.flatMap((root) => listSources(rootDir, root)).sort((a, b) => a.localeCompare(b));
  const edges = files.flatMap((file) => importsOf(rootDir, file));
  return { files, edges };
}

function listSources(rootDir: string, root: string): string[] {
  const dir = path.join(rootDir, root);
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && SOURCE.test(entry.name) && !entry.name.endsWith('.d.ts'))
    .map((entry) => toPosix(path.relative(rootDir, path.join(entry.parentPath, entry.name))))
    .filter((file) => !file.split('/').includes('node_modules'));
}

function importsOf(rootDir: string, file: string): ImportEdge[] {
  const text = readFileSync(path.join(rootDir, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
  const edges: ImportEdge[] = [];
  const add = (specifier: string, value: boolean) => {
    const edge = resolve(rootDir, file, specifier, value);
    if (edge !== undefined) edges.push(edge);
  };
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node.moduleSpecifier.text, node.importClause?.isTypeOnly !== true);
    } else if (
      ts.isExportDeclaration(node) &&
      node.moduleSpecifier !== undefined &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      add(node.moduleSpecifier.text, !node.isTypeOnly);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] !== undefined &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      add(node.arguments[0].text, true);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return edges;
}

function resolve(rootDir: string, from: string, specifier: string, value: boolean): ImportEdge | undefined {
  if (specifier.startsWith('node:') || builtins.has(specifier)) return undefined;
  if (!specifier.startsWith('.')) {
    const parts = specifier.split('/');
    const pkg = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
    return { from, to: undefined, pkg, specifier, value };
  }
  const target = toPosix(path.normalize(path.join(path.dirname(from), specifier)));
  // NodeNext: `./x.js` names the source `./x.ts`.
  const candidates = [target, target.replace(/\.js$/, '.ts'), target.replace(/\.mjs$/, '.mts')];
  const to = candidates.find((candidate) => existsSync(path.join(rootDir, candidate))) ?? target;
  return { from, to, pkg: undefined, specifier, value };
}

function toPosix(p: string): string {
  return p.split(path.sep).join('/');
}

/** Every project file reachable from `entry` through value imports (what a bundler would carry). */
export function reachableByValue(graph: SourceGraph, entry: string): Set<string> {
  const seen = new Set<string>([entry]);
  const stack = [entry];
  while (stack.length > 0) {
    const file = stack.pop()!;
    for (const edge of graph.edges) {
      if (edge.from !== file || !edge.value || edge.to === undefined || seen.has(edge.to)) continue;
      seen.add(edge.to);
      stack.push(edge.to);
    }
  }
  return seen;
}

/** A set of files that import each other in a circle, and one shortest closed path through them. */
export interface ImportCycle {
  /** Every file of the strongly connected component, sorted. */
  files: string[];
  /** A closed path from the first file back to itself, e.g. `[a, b, a]`. */
  path: string[];
}

/** One import cycle per strongly connected component of `edges` (Tarjan). */
export function findCycles(edges: ReadonlyArray<{ from: string; to: string }>): ImportCycle[] {
  const next = new Map<string, Set<string>>();
  for (const { from, to } of edges) {
    if (!next.has(from)) next.set(from, new Set());
    next.get(from)!.add(to);
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let counter = 0;
  const connect = (node: string) => {
    index.set(node, counter);
    low.set(node, counter);
    counter++;
    stack.push(node);
    onStack.add(node);
    for (const to of next.get(node) ?? []) {
      if (!index.has(to)) {
        connect(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node)!, index.get(to)!));
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
      const selfLoop = next.get(node)?.has(node) === true;
      if (component.length > 1 || selfLoop) components.push(component);
    }
  };
  for (const node of [...next.keys()].sort()) if (!index.has(node)) connect(node);
  return components.map((component) => {
    const files = component.sort();
    return { files, path: closedPath(files[0]!, new Set(files), next) };
  });
}

/** A shortest path from `start` back to itself inside one component (breadth first). */
function closedPath(start: string, members: Set<string>, next: Map<string, Set<string>>): string[] {
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const to of next.get(node) ?? []) {
      if (!members.has(to)) continue;
      if (to === start) {
        const pathBack = [start];
        for (let at: string | undefined = node; at !== undefined && at !== start; at = cameFrom.get(at)) {
          pathBack.unshift(at);
        }
        return [start, ...pathBack];
      }
      if (!cameFrom.has(to)) {
        cameFrom.set(to, node);
        queue.push(to);
      }
    }
  }
  return [start, start];
}
