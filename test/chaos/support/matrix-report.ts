// The fault matrix's results: written as JSON by the full run, and rendered from that JSON into the
// README's tables (between markers), so the figures there are never typed by hand.
import { readFileSync, writeFileSync } from 'node:fs';
import { FAULT_KINDS, MATRIX_CALLS } from './matrix-cells.js';
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
  const lines: string[] = [];
  const runs = results.runs;
  const seeds = [...new Set(runs.map((r) => r.seed))].sort((a, b) => a - b);
  const schedules = [...new Set(runs.map((r) => r.schedule))];
  lines.push(
    `\`${results.command}\`, ${results.generatedAt}: ${runs.length} runs (${MATRIX_CALLS.length} calls x ${FAULT_KINDS.length} faults x schedules ${schedules.join(', ')} x seeds ${seeds.join(', ')}), ${(results.durationMs / 1000).toFixed(0)} s. Violations in total: **${sum(runs.map((r) => r.violations.length))}**.`,
    '',
    `| call | ${FAULT_KINDS.join(' | ')} |`,
    `|---|${FAULT_KINDS.map(() => '---').join('|')}|`,
  );
  for (const call of MATRIX_CALLS) {
    const cells = FAULT_KINDS.map((fault) =>
      summary(runs.filter((r) => r.call === call.name && r.fault === fault)),
    );
    lines.push(`| ${call.name} | ${cells.join(' | ')} |`);
  }
  lines.push(
    '',
    '| cell | runs | faults injected | 1st invocation: written / dead-lettered / redelivered | invocations to settle (max) | slowest invocation / budget | permits peak / limit | S3 in flight peak | DLQ copies of one letter (max) | violations |',
    '|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const call of MATRIX_CALLS) {
    for (const fault of FAULT_KINDS) {
      const cell = runs.filter((r) => r.call === call.name && r.fault === fault);
      if (cell.length === 0) continue;
      lines.push(
        `| ${call.name} x ${fault} | ${cell.length} | ${sum(cell.map((r) => r.injected))} | ${sum(cell.map((r) => r.firstRound.written))} / ${sum(cell.map((r) => r.firstRound.deadLettered))} / ${sum(cell.map((r) => r.firstRound.redelivered))} | ${max(cell.map((r) => r.invocations))} | ${max(cell.map((r) => r.slowestInvocationMs))} / ${cell[0]!.budgetMs} ms | ${max(cell.map((r) => r.permitPeak))} / ${cell[0]!.permitLimit} | ${max(cell.map((r) => r.s3InFlightPeak))} | ${max(cell.map((r) => r.letterCopiesMax))} | ${sum(cell.map((r) => r.violations.length))} |`,
      );
    }
  }
  return lines.join('\n');
}

/** Writes the results JSON and replaces the README's generated section with its tables. */
export function publishMatrix(results: MatrixResults, jsonPath: string, readmePath: string): void {
  writeFileSync(jsonPath, `${JSON.stringify(results, null, 2)}\n`);
  const readme = readFileSync(readmePath, 'utf8');
  const begin = readme.indexOf(README_BEGIN);
  const end = readme.indexOf(README_END);
  if (begin === -1 || end < begin)
    throw new Error(`${readmePath}: markers of the generated matrix not found`);
  writeFileSync(
    readmePath,
    `${readme.slice(0, begin + README_BEGIN.length)}\n${renderMatrix(results)}\n${readme.slice(end)}`,
  );
}
