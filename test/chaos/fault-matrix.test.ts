import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cellName, MATRIX_CELLS } from './support/matrix-cells.js';
import { type MatrixStack, runCell, startMatrixStack } from './support/matrix-run.js';

// The cut of the fault matrix that runs in `npm test`: every cell once (seed 1, the fault on every
// matching call of the first invocation, then redelivery without faults). The full matrix (more seeds,
// messages and schedules, README table) is `npm run test:chaos` (fault-matrix.chaos.ts).
let stack: MatrixStack;
beforeAll(async () => {
  stack = await startMatrixStack();
});
afterAll(async () => {
  await stack?.stop();
});

describe('fault matrix: every AWS call of the handler x {error, throttle, stall, unknown outcome}', () => {
  it.each(MATRIX_CELLS.map((cell) => [cellName(cell), cell] as const))('%s', async (_name, cell) => {
    const result = await runCell(stack, cell, { seed: 1, schedule: 'first-round', records: 6, bad: 2 });
    expect(result.injected, "the cell's call was faulted").toBeGreaterThan(0);
    expect(result.violations).toEqual([]);
    expect(result.invocations).toBeGreaterThanOrEqual(1);
  });
});
