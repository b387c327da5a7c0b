import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export type Cell = string | number | boolean | null | undefined;
export type Row = Record<string, Cell>;

const resultsDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'results');

function formatCell(value: Cell): string {
  if (value === null || value === undefined) return '-';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return String(value);
    if (Number.isInteger(value)) return value.toLocaleString('en-US');
    return value.toLocaleString('en-US', { maximumFractionDigits: Math.abs(value) < 10 ? 2 : 1 });
  }
  return String(value);
}

/** Renders rows as a Markdown table (columns in first-seen key order), ready for the terminal or a README. */
export function markdownTable(rows: readonly Row[]): string {
  const columns = [...new Set(rows.flatMap((row) => Object.keys(row)))];
  const cells = rows.map((row) => columns.map((column) => formatCell(row[column])));
  const widths = columns.map((column, i) => Math.max(column.length, ...cells.map((line) => line[i]!.length)));
  const line = (values: readonly string[]) => `| ${values.map((v, i) => v.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(columns), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}

/**
 * Prints a benchmark's table and writes `bench/results/<name>.json` with the rows plus the context that
 * makes them comparable (machine, Node version, date). Returns the path written.
 */
export function writeResults(
  name: string,
  rows: readonly Row[],
  extra: Record<string, unknown> = {},
): string {
  mkdirSync(resultsDir, { recursive: true });
  const path = join(resultsDir, `${name}.json`);
  const payload = {
    benchmark: name,
    date: new Date().toISOString(),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    cpus: availableParallelism(),
    ...extra,
    rows,
  };
  writeFileSync(path, `${JSON.stringify(payload, null, 2)}\n`);
  console.log(`\n${markdownTable(rows)}\n\nwritten: ${path}`);
  return path;
}
