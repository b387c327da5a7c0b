import { readFileSync } from 'node:fs';

/** The parts of a V8 `.cpuprofile` (node --cpu-prof) this summary reads. */
interface CpuProfile {
  nodes: Array<{
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
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
  }
  return { totalMs, byPackage: top(byPackage, totalMs, n), byFunction: top(byFunction, totalMs, n) };
}
