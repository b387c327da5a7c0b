// The fault matrix's results: the full run writes them as JSON to an ignored file (a test never writes a
// tracked file); `npm run chaos:publish` copies a run a person chose to keep into results/fault-matrix.json
// and renders it into test/chaos/README.md's tables (between markers), so those figures are never typed
// by hand.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { cellName, FAULT_KINDS, MATRIX_CALLS, MATRIX_CELLS } from './matrix-cells.js';
import type { CellResult } from './matrix-run.js';

export interface MatrixResults {
  readonly generatedAt: string;
  readonly command: string;
  readonly durationMs: number;
  readonly runs: readonly CellResult[];
}

export const README_BEGIN = '<!-- fault-matrix:begin (generated from results/fault-matrix.json) -->';
export const README_END = '<!-- fault-matrix:end -->';

const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
const max = (xs: readonly number[]) => Math.max(0, ...xs);

/** One line of the compact matrix: what the first invocation did with the batch, over every run. */
function summary(runs: readonly CellResult[]): string {
  if (runs.length === 0) return 'not run';
  const violations = sum(runs.map((r) => r.violations.length));
  const redelivered = sum(runs.map((r) => r.firstRound.redelivered));
  const messages = sum(runs.map((r) => r.messages));
  const verdict = violations === 0 ? 'ok' : `**${violations} violations**`;
  const what = redelivered === 0 ? 'all settled at once' : `${redelivered}/${messages} redelivered`;
  return `${verdict}: ${what}, <= ${max(runs.map((r) => r.invocations))} inv., ${(max(runs.map((r) => r.slowestInvocationMs)) / 1000).toFixed(1)} s`;
}

/** The two markdown tables: the call x fault matrix, and every cell's figures. */
export function renderMatrix(results: MatrixResults): string {
  const { runs } = results;
  const seeds = [...new Set(runs.map((r) => r.seed))].sort((a, b) => a - b);
  const schedules = [...new Set(runs.map((r) => r.schedule))];
  const lines: string[] = [
    `\`${results.command}\`, ${results.generatedAt}: ${runs.length} runs (${MATRIX_CELLS.length} cells: ${MATRIX_CALLS.length} calls x ${FAULT_KINDS.length} faults and the late booking; x schedules ${schedules.join(', ')} x seeds ${seeds.join(', ')}), ${(results.durationMs / 1000).toFixed(0)} s. Violations in total: **${sum(runs.map((r) => r.violations.length))}**.`,
    '',
    `| call | ${FAULT_KINDS.join(' | ')} |`,
    `|---|${FAULT_KINDS.map(() => '---').join('|')}|`,
  ];
  for (const call of MATRIX_CALLS) {
    const cells = FAULT_KINDS.map((fault) =>
      summary(runs.filter((r) => r.call === call.name && r.fault === fault)),
    );
    lines.push(`| ${call.name} | ${cells.join(' | ')} |`);
  }
  lines.push(
    '',
    "The rate column is the invariant's: most writes S3 accepted on the prefix in any 250 ms window, and the skew allowed (longest event-loop stall + 25 ms).",
    '',
    '| cell | runs | faults injected | 1st invocation: written / dead-lettered / deferred / redelivered | invocations to settle (max) | slowest invocation / budget | longest event-loop stall | bookings | slots booked | decreases followed | lowest rate (writes/s) | accepted writes per 250 ms (max) / skew (max) | S3 in flight peak | DLQ copies of one letter (max) | violations |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const name of MATRIX_CELLS.map(cellName)) {
    const cell = runs.filter((r) => r.cell === name);
    if (cell.length === 0) continue;
    const total = (f: (x: CellResult['rate']) => number) => sum(cell.map((r) => f(r.rate)));
    const most = (f: (x: CellResult['rate']) => number) => max(cell.map((r) => f(r.rate)));
    const lowest = Math.min(...cell.map((r) => r.rate.lowestRate));
    lines.push(
      `| ${name} | ${cell.length} | ${sum(cell.map((r) => r.injected))} | ${sum(cell.map((r) => r.firstRound.written))} / ${sum(cell.map((r) => r.firstRound.deadLettered))} / ${sum(cell.map((r) => r.firstRound.deferred))} / ${sum(cell.map((r) => r.firstRound.redelivered))} | ${max(cell.map((r) => r.invocations))} | ${max(cell.map((r) => r.slowestInvocationMs))} / ${cell[0]!.budgetMs} ms | ${max(cell.map((r) => r.loopStallMaxMs))} ms | ${total((x) => x.bookings)} | ${total((x) => x.slots)} | ${total((x) => x.decreasesFollowed)} | ${lowest} | ${most((x) => x.windowPeak)} / ${most((x) => x.skewMs)} ms | ${max(cell.map((r) => r.s3InFlightPeak))} | ${max(cell.map((r) => r.letterCopiesMax))} | ${sum(cell.map((r) => r.violations.length))} |`,
    );
  }
  return lines.join('\n');
}

function replaceBetween(path: string, begin: string, end: string, text: string): void {
  const content = readFileSync(path, 'utf8');
  const from = content.indexOf(begin);
  const to = content.indexOf(end);
  if (from === -1 || to < from) throw new Error(`${path}: markers of the generated fault matrix not found`);
  writeFileSync(path, `${content.slice(0, from + begin.length)}\n${text}\n${content.slice(to)}`);
}

/** Writes one run's results as JSON (the full run writes an ignored file; see `publishMatrix`). */
export function writeMatrixResults(results: MatrixResults, path: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(results, null, 2)}\n`);
}

/** Reads results written by `writeMatrixResults`. */
export function readMatrixResults(path: string): MatrixResults {
  return JSON.parse(readFileSync(path, 'utf8')) as MatrixResults;
}

/**
 * Publishes a run: its JSON to the tracked results file and its tables into test/chaos/README.md (between
 * the markers). Run by `npm run chaos:publish`, never by a test.
 */
export function publishMatrix(results: MatrixResults, paths: { json: string; chaosReadme: string }): void {
  writeMatrixResults(results, paths.json);
  replaceBetween(paths.chaosReadme, README_BEGIN, README_END, renderMatrix(results));
}
