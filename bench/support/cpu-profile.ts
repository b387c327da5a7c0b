import { readFileSync } from 'node:fs';

/** The parts of a V8 `.cpuprofile` (node --cpu-prof) this summary reads. */
interface CpuProfile {
  nodes: Array<{
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    children?: number[];
  }>;
  samples: number[];
  timeDeltas: number[];
}

/** Self time of one function or one package, ms and share of the profile. */
export interface SelfTime {
  name: string;
  selfMs: number;
  share: number;
}

export interface ProfileSummary {
  totalMs: number;
  byPackage: SelfTime[];
  byFunction: SelfTime[];
  /**
   * Self time by the innermost frame of this repository on the sample's stack (its folder under lib/, e.g.
   * `lib/db`): what our code asked for, the SDK and Node work it called included. `(no repo frame)`: work
   * started by the event loop (socket reads, timers) or by the runtime (GC).
   */
  byCaller: SelfTime[];
}

/**
 * Where a profiled function lives: the npm package of a `node_modules/` path, `node:*` for Node's own
 * modules, `s3-ingest` for this repository's files, V8's pseudo frames (`(garbage collector)`, `(program)`,
 * `(idle)`) as they are.
 */
export function packageOfUrl(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return 'node:internal';
  const at = url.lastIndexOf('node_modules/');
  if (at >= 0) {
    const parts = url.slice(at + 'node_modules/'.length).split('/');
    return parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1]}` : (parts[0] ?? url);
  }
  return 's3-ingest';
}

function top(totals: Map<string, number>, totalMs: number, n: number): SelfTime[] {
  return [...totals]
    .map(([name, selfMs]) => ({ name, selfMs, share: totalMs === 0 ? 0 : selfMs / totalMs }))
    .sort((a, b) => b.selfMs - a.selfMs)
    .slice(0, n);
}

/** Self time per package and the `n` functions with the most self time (idle excluded from the total). */
export function summarizeCpuProfile(path: string, n = 15): ProfileSummary {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const nodes = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const byPackage = new Map<string, number>();
  const byFunction = new Map<string, number>();
  const parents = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
  const callerOf = new Map<number, string>();
  const caller = (id: number): string => {
    const known = callerOf.get(id);
    if (known !== undefined) return known;
    const url = nodes.get(id)?.url ?? '';
    const at = url.indexOf('/lib/');
    const parent = parents.get(id);
    const owner =
      at >= 0 && !url.includes('node_modules/')
        ? url
            .slice(at + 1)
            .split('/')
            .slice(0, 3)
            .join('/')
            .replace(/\.ts$/, '')
        : parent === undefined
          ? '(no repo frame)'
          : caller(parent);
    callerOf.set(id, owner);
    return owner;
  };
  const byCaller = new Map<string, number>();
  let totalMs = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const frame = nodes.get(profile.samples[i]!);
    if (frame === undefined || frame.functionName === '(idle)') continue;
    const ms = (profile.timeDeltas[i] ?? 0) / 1000;
    totalMs += ms;
    const pkg = packageOfUrl(frame.url, frame.functionName);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + ms);
    const file = frame.url.slice(frame.url.lastIndexOf('/') + 1);
    const name = `${frame.functionName || '(anonymous)'} ${pkg}${file === '' ? '' : ` ${file}:${frame.lineNumber + 1}`}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + ms);
    const owner = caller(profile.samples[i]!);
    byCaller.set(owner, (byCaller.get(owner) ?? 0) + ms);
  }
  return {
    totalMs,
    byPackage: top(byPackage, totalMs, n),
    byFunction: top(byFunction, totalMs, n),
    byCaller: top(byCaller, totalMs, n),
  };
}
