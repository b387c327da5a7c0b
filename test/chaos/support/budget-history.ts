// A prefix's rate budget as the fault matrix sees it (lib/semaphore/budget-item.ts): its grants rebuilt
// from the budget item's writes that reached DynamoDB (the fault proxy's log), and the item's own
// invariant read from a table scan.
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { ProxiedCall } from '../../../lib/local/faults/fault-proxy.js';
import { budgetKey } from '../../../lib/semaphore/budget-item.js';
import type { RateGrant } from './rate-check.js';

interface UpdateInput {
  TableName?: string;
  Key?: { pk?: { S?: string } };
  UpdateExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Record<string, AttributeValue>;
}

function updateOf(call: ProxiedCall): UpdateInput | undefined {
  if (call.call.operation !== 'UpdateItem') return undefined;
  try {
    return JSON.parse(call.call.body) as UpdateInput;
  } catch {
    return undefined;
  }
}

/**
 * The grants of budget `name` in `table`: every take DynamoDB applied (status 200, its answer lost or not),
 * from its arrival to the first applied write that removed its entry (a release, with or without a budget
 * step, or a reclaim), else to its lease end. A take counts from its arrival, a few ms before DynamoDB
 * applied it: the grant is read a little longer than it was, never shorter.
 */
export function grantsOf(calls: readonly ProxiedCall[], table: string, name: string): RateGrant[] {
  const pk = budgetKey(name).pk?.S;
  const open = new Map<string, { rate: number; from: number; until: number }>();
  const grants: RateGrant[] = [];
  const applied = calls
    .filter((c) => c.upstreamStatus === 200)
    .map((c) => ({ at: c.at, input: updateOf(c) }))
    .filter((c) => c.input?.TableName === table && c.input.Key?.pk?.S === pk)
    .sort((a, b) => a.at - b.at);
  for (const { at, input } of applied) {
    const expression = input!.UpdateExpression ?? '';
    const names = input!.ExpressionAttributeNames ?? {};
    const values = input!.ExpressionAttributeValues ?? {};
    if (expression.startsWith('SET #holders.#f = :entry')) {
      const entry = values[':entry']?.M ?? {};
      open.set(names['#f'] ?? '', {
        rate: Number(entry.r?.N),
        from: at,
        until: Number(entry.until?.N),
      });
      continue;
    }
    if (!expression.startsWith('REMOVE ')) continue;
    // A release names its entry `#f`, a reclaim `#h0`, `#h1`, ...
    const removed = Object.entries(names)
      .filter(([placeholder]) => placeholder === '#f' || /^#h\d+$/.test(placeholder))
      .map(([, fence]) => fence);
    for (const fence of removed) {
      const grant = open.get(fence);
      if (grant === undefined) continue;
      open.delete(fence);
      grants.push({ fence, rate: grant.rate, from: grant.from, to: Math.min(at, grant.until) });
    }
  }
  for (const [fence, g] of open) grants.push({ fence, rate: g.rate, from: g.from, to: g.until });
  return grants;
}

/** What one scan of a budget item says: the rate its holders hold, its budget, and any broken invariant. */
export interface BudgetSample {
  readonly held: number;
  readonly budget: number;
  readonly violations: readonly string[];
}

/** Grid slack for sums of rates kept to a millionth (`onRateGrid`). */
const RATE_GRID = 1e-6;

/**
 * Checks one budget item (docs/fleet-cap.md#state): `free = budget - sum(holders)` on the grid, and the
 * budget within `[ceiling x min share, ceiling]`.
 */
export function sampleBudgetItem(
  item: Record<string, AttributeValue>,
  ceiling: number,
  minShare: number,
): BudgetSample {
  const where = item.pk?.S ?? '?';
  const budget = Number(item.budget?.N);
  const free = Number(item.free?.N);
  const holders = Object.values(item.holders?.M ?? {});
  const held = holders.reduce((sum, h) => sum + Number(h.M?.r?.N ?? Number.NaN), 0);
  const violations: string[] = [];
  const slack = RATE_GRID * (holders.length + 2);
  if (!(Math.abs(budget - free - held) <= slack))
    violations.push(`${where}: budget ${budget} - free ${free} but holders hold ${held}`);
  if (!(budget <= ceiling + slack && budget >= ceiling * minShare - slack))
    violations.push(`${where}: budget ${budget} outside [${ceiling * minShare}, ${ceiling}]`);
  return { held, budget, violations };
}
