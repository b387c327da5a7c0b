// The cut of the fault matrix that runs in `npm test`: every cell once (seed 1, the fault on every
// matching call of the first invocation, then redelivery without faults), split by service over two
// files so vitest's two workers share it; of a call that needs a scenario (seconds of its own: refused
// writes, turn waits and delayed copies) one cell only. The full matrix is `npm run test:chaos`
// (fault-matrix.chaos.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AwsService } from '../../../lib/local/faults/aws-call.js';
import { cellName, FAULT_KINDS, type FaultKind, MATRIX_CELLS, type MatrixCell } from './matrix-cells.js';
import { type MatrixStack, runCell, startMatrixStack } from './matrix-run.js';

/**
 * The cell the cut runs of each call that needs a scenario: the lost answer, where the handler has to
 * reconcile (a step that moved the rate landed unseen; a copy queued while its record is redelivered).
 */
const SCENARIO_CELL_IN_CUT: Readonly<Record<string, FaultKind>> = {
  'dynamodb rate step': 'unknown-outcome',
  'sqs deferral send': 'unknown-outcome',
};

function inCut(cell: MatrixCell): boolean {
  if (!FAULT_KINDS.includes(cell.fault)) return false;
  const scenario = cell.call.scenario ?? 'plain';
  return scenario === 'plain' || SCENARIO_CELL_IN_CUT[cell.call.name] === cell.fault;
}

export function describeMatrixCut(services: readonly AwsService[]): void {
  let stack: MatrixStack;
  beforeAll(async () => {
    stack = await startMatrixStack();
  });
  afterAll(async () => {
    await stack?.stop();
  });
  const cells = MATRIX_CELLS.filter((cell) => services.includes(cell.call.service) && inCut(cell));
  describe(`fault matrix (${services.join(', ')}): each call x {error, throttle, stall, unknown outcome}`, () => {
    it.each(cells.map((cell) => [cellName(cell), cell] as const))('%s', async (_name, cell) => {
      const result = await runCell(stack, cell, { seed: 1, schedule: 'first-round', records: 6, bad: 2 });
      expect(result.injected, "the cell's call was faulted").toBeGreaterThan(0);
      expect(result.violations).toEqual([]);
    });
  });
}
