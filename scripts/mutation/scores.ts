/**
 * Prints each mutated file's scores from a Stryker JSON report (mutation-testing-elements schema) made by
 * run.sh or file.sh, whose run had every `Stryker disable` comment made inert (stripped-copy.sh):
 * - raw: killed + timeout over every mutant that ran (all of them: no disable applies);
 * - reported: the same with the mutants the file's current `Stryker disable` comments switch off left out.
 *   Which mutants those are is decided by Stryker's own instrumenter on the source as it is, so this is the
 *   score a run with the comments would report, mutant for mutant.
 * Static mutants (ignoreStatic) are `Ignored` in the report and left out of both. Exits 1 when a file's raw
 * score is under 85 %. With `--disables`, also lists every disabled mutant with what it did in the run
 * (a disable should hide only survivors that are equivalent).
 */
import { readFileSync } from 'node:fs';
import { Instrumenter } from '@stryker-mutator/instrumenter';

interface Position {
  readonly line: number;
  readonly column: number;
}
interface ReportMutant {
  readonly mutatorName: string;
  readonly replacement?: string;
  readonly location: { readonly start: Position; readonly end: Position };
  readonly status: string;
}
interface Report {
  readonly files: Record<string, { readonly mutants: readonly ReportMutant[] }>;
}

const TARGET_PERCENT = 85;
const args = process.argv.slice(2);
const listDisabled = args.includes('--disables');
const path = args.find((arg) => !arg.startsWith('--')) ?? 'reports/mutation/mutation.json';
const report = JSON.parse(readFileSync(path, 'utf8')) as Report;

const quiet = (): void => {};
const logger = {
  isTraceEnabled: () => false,
  isDebugEnabled: () => false,
  isInfoEnabled: () => false,
  isWarnEnabled: () => false,
  isErrorEnabled: () => false,
  isFatalEnabled: () => false,
  trace: quiet,
  debug: quiet,
  info: quiet,
  warn: quiet,
  error: quiet,
  fatal: quiet,
};

/** One key per mutant: the report's positions are 1-based, the instrumenter's lines 0-based. */
const key = (mutatorName: string, replacement: string | undefined, line: number, column: number): string =>
  `${mutatorName}@${line}:${column}=${replacement ?? ''}`;

/** The keys of the mutants the file's current `Stryker disable` comments switch off. */
async function disabledKeys(file: string): Promise<Set<string>> {
  const instrumenter = new Instrumenter(logger);
  const { mutants } = await instrumenter.instrument(
    [{ name: file, content: readFileSync(file, 'utf8'), mutate: true }],
    { plugins: null, excludedMutations: [], ignorers: [] },
  );
  return new Set(
    mutants
      .filter((m) => m.status === 'Ignored')
      .map((m) => key(m.mutatorName, m.replacement, m.location.start.line + 1, m.location.start.column + 1)),
  );
}

const score = (detected: number, undetected: number): number =>
  detected + undetected === 0 ? 100 : (100 * detected) / (detected + undetected);

const rows = [];
for (const [file, { mutants }] of Object.entries(report.files)) {
  const disabled = await disabledKeys(file);
  const ran = mutants.filter((m) => m.status !== 'Ignored');
  const isDisabled = (m: ReportMutant): boolean =>
    disabled.has(key(m.mutatorName, m.replacement, m.location.start.line, m.location.start.column));
  const matched = ran.filter(isDisabled).length;
  const inReport = mutants.filter(isDisabled).length;
  const detectedOf = (ms: readonly ReportMutant[]): number =>
    ms.filter((m) => m.status === 'Killed' || m.status === 'Timeout').length;
  const undetectedOf = (ms: readonly ReportMutant[]): number =>
    ms.filter((m) => m.status === 'Survived' || m.status === 'NoCoverage').length;
  const kept = ran.filter((m) => !isDisabled(m));
  const disabledRan = ran.filter(isDisabled);
  if (listDisabled) {
    for (const m of disabledRan) {
      const { start, end } = m.location;
      const at = `${file}:${start.line}:${start.column}-${end.line}:${end.column}`;
      console.log(
        `${m.status === 'Killed' || m.status === 'Timeout' ? 'KILLED  ' : 'survived'} ${at} ${m.mutatorName} -> ${m.replacement ?? ''}`,
      );
    }
  }
  rows.push({
    file,
    raw: score(detectedOf(ran), undetectedOf(ran)),
    rawCounts: `${detectedOf(ran)} / ${detectedOf(ran) + undetectedOf(ran)}`,
    reported: score(detectedOf(kept), undetectedOf(kept)),
    reportedCounts: `${detectedOf(kept)} / ${detectedOf(kept) + undetectedOf(kept)}`,
    disabled: matched,
    disabledKilled: detectedOf(disabledRan),
    unmatched: disabled.size - inReport,
  });
}

console.log(
  '| file | raw score (no disables) | reported score (disables applied) | disabled mutants (of them killed) |',
);
console.log('|---|---:|---:|---:|');
for (const r of rows) {
  console.log(
    `| ${r.file} | ${r.raw.toFixed(1)} % (${r.rawCounts}) | ${r.reported.toFixed(1)} % (${r.reportedCounts}) | ${r.disabled} (${r.disabledKilled}) |`,
  );
}
for (const r of rows.filter((row) => row.unmatched > 0)) {
  // A disabled mutant the report does not hold: the report is older than the source, or was made with the
  // comments in force (then its disabled mutants are Ignored and the raw score is not measured).
  console.error(
    `${r.file}: ${r.unmatched} disabled mutant(s) not in the report; re-run with run.sh or file.sh`,
  );
  process.exitCode = 1;
}
const under = rows.filter((r) => r.raw < TARGET_PERCENT);
if (under.length > 0) {
  console.error(`raw score under ${TARGET_PERCENT} %: ${under.map((r) => r.file).join(', ')}`);
  process.exitCode = 1;
}
