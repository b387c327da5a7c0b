import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cellName, type FaultSchedule, MATRIX_CELLS } from './support/matrix-cells.js';
import { type MatrixResults, renderMatrix, writeMatrixResults } from './support/matrix-report.js';
import { type CellResult, type MatrixStack, runCell, startMatrixStack } from './support/matrix-run.js';

// The full fault matrix (`npm run test:chaos`): every cell under three schedules (every matching call of
// the first invocation, the first matching call only, half of them for three invocations) and two seeds,
// with 12 records (24 writes) and 3 bad messages per batch. Writes results/fault-matrix.latest.json
// (ignored by git); `npm run chaos:publish` takes it into the tracked results and the README's tables.
const SCHEDULES: readonly FaultSchedule[] = ['first-round', 'once', 'flaky'];
const SEEDS = [1, 2] as const;
const EXPECTED_RUNS = MATRIX_CELLS.length * SCHEDULES.length * SEEDS.length;
const runs: CellResult[] = [];
const startedAt = Date.now();
let stack: MatrixStack;

beforeAll(async () => {
  stack = await startMatrixStack();
});
afterAll(async () => {
  await stack?.stop();
  if (runs.length !== EXPECTED_RUNS) return; // a partial run publishes nothing
  const results: MatrixResults = {
    generatedAt: new Date().toISOString(),
    command: 'npm run test:chaos -- test/chaos/fault-matrix.chaos.ts',
    durationMs: Date.now() - startedAt,
    runs,
  };
  const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
  writeMatrixResults(results, here('./results/fault-matrix.latest.json'));
  console.log(renderMatrix(results));
});

describe('full fault matrix', () => {
  it.each(MATRIX_CELLS.map((cell) => [cellName(cell), cell] as const))('%s', async (_name, cell) => {
    const results: CellResult[] = [];
    for (const schedule of SCHEDULES)
      for (const seed of SEEDS)
        results.push(await runCell(stack, cell, { seed, schedule, records: 12, bad: 3 }));
    runs.push(...results);
    for (const r of results) {
      expect(r.violations, `${r.cell} ${r.schedule} seed ${r.seed}`).toEqual([]);
      if (r.schedule !== 'flaky')
        expect(r.injected, `${r.cell} ${r.schedule} seed ${r.seed}`).toBeGreaterThan(0);
    }
  });
});
