import type { Logger } from '@aws-lambda-powertools/logger';
import { SemaphoreTimeoutError } from '../../../semaphore/errors.js';
import type { InvocationDeadline } from '../invocation-deadline.js';
import type { TenantPlan } from '../plan/plan-batch.js';
import { canDefer } from '../settle/defer-out-of-turn.js';
import type { InvocationMetrics } from '../settle/invocation-metrics.js';
import type { OutcomeLedger } from '../settle/outcome-ledger.js';
import type { PrefixRates } from './prefix-rates.js';
import type { TenantDatabase, TenantDatabases } from './tenant-databases.js';
import { runTenantWrites } from './tenant-writes.js';
import type { TransientCause } from './write-outcome.js';

/** What the run stage needs of the invocation. */
export interface RunContext {
  readonly ledger: OutcomeLedger;
  readonly deadline: InvocationDeadline;
  readonly metrics: InvocationMetrics;
  readonly logger: Logger;
  /**
   * How long a tenant whose records can be deferred waits for its first slot (`canDefer`); one whose
   * prefix's schedule is booked past that is `out-of-turn`. @default undefined (no deferral: every tenant waits until the cutoff)
   */
  readonly turnWaitMs?: number;
  /**
   * Whether the deferral port could take the record of this message id (`DeferralPort.takes`): a tenant
   * with one it could not waits for its slots as long as any tenant. @default every record
   */
  readonly deferrable?: (messageId: string) => boolean;
}

/** One tenant at run time: its plan with its Database and pool (what `PrefixRates` hands back). */
interface TenantRun extends TenantDatabase {
  /** The cache entry, released (by identity) when the stage ends. */
  readonly entry: TenantDatabase;
  readonly plan: TenantPlan;
  readonly writes: number;
  readonly maxWaitMs: number | undefined;
  /** The resources its writes go to (a tenant writing only sharded ones books a stripe). */
  readonly resources: readonly string[];
}

/** The resources a tenant's writes go to, each once. */
function resourcesOf(plan: TenantPlan): string[] {
  return [...new Set(plan.chains.flatMap((chain) => chain.map((w) => w.resource)))];
}

/** Marks every write of a tenant that could not run: redelivered, with why. */
function redeliverTenant(
  ledger: OutcomeLedger,
  plan: TenantPlan,
  cause: TransientCause,
  error: unknown,
): void {
  for (const chain of plan.chains) {
    for (const write of chain)
      ledger.settle(write.messageId, { kind: 'transient', cause, error }, write.tenant);
  }
}

/** Marks every write of a tenant whose prefix's slots were booked by others past its wait: `out-of-turn`. */
function outOfTurn(ledger: OutcomeLedger, plan: TenantPlan, error: SemaphoreTimeoutError): void {
  for (const chain of plan.chains) {
    for (const write of chain) ledger.settle(write.messageId, { kind: 'out-of-turn', error }, write.tenant);
  }
}

/**
 * The run stage: each tenant's writes under its prefix's rate, through its own pool. A tenant whose Database
 * or slots cannot be had is redelivered; the others go on. Tenants stay pinned in the Database cache until
 * the stage ends.
 */
export async function runTenants(
  plans: readonly TenantPlan[],
  databases: TenantDatabases,
  rates: PrefixRates,
  context: RunContext,
): Promise<void> {
  const { ledger, deadline, logger, metrics } = context;
  const deferrable = (plan: TenantPlan) =>
    canDefer(plan) &&
    plan.chains.every((chain) => chain.every((w) => context.deferrable?.(w.messageId) ?? true));
  const runs: TenantRun[] = [];
  try {
    await Promise.all(
      plans.map(async (plan) => {
        try {
          const entry = await databases.get(plan.tenant);
          runs.push({
            ...entry,
            entry,
            plan,
            writes: plan.writes,
            maxWaitMs: context.turnWaitMs !== undefined && deferrable(plan) ? context.turnWaitMs : undefined,
            resources: resourcesOf(plan),
          });
          metrics.watch(entry.pool);
        } catch (error) {
          logger.error('tenant database unavailable', { tenant: plan.tenant, error });
          redeliverTenant(ledger, plan, 'storage', error);
        }
      }),
    );
    const report = await rates.run(
      runs,
      { deadline: deadline.cutoff, signal: deadline.signal },
      // `signal`: the cutoff, or sooner the tenant's holder giving up its writes left (no slot for them).
      async (run, signal) => {
        try {
          await runTenantWrites(run.db, run.plan.chains, {
            ledger,
            deadline: signal,
            logger,
            onStale: () => metrics.countStale(),
          });
        } catch (error) {
          // A bug of ours (the ledger refusing a second outcome, say): the tenant's records that have an
          // outcome keep it, the others are redelivered.
          logger.error('tenant run failed', { tenant: run.tenant, error });
        }
      },
    );
    for (const [run, result] of report.results) {
      if ('rate' in result) {
        metrics.counts.BookedWriteRate += result.rate;
        continue;
      }
      if ('outOfTurn' in result && result.unavailable instanceof SemaphoreTimeoutError) {
        // Only out of turn (others booked the slots): deferred when it can be, else redelivered.
        outOfTurn(ledger, run.plan, result.unavailable);
        continue;
      }
      logger.warn('no slots in the prefix schedule: tenant writes redelivered', {
        tenant: run.tenant,
        error: result.unavailable,
      });
      redeliverTenant(ledger, run.plan, 'permits-unavailable', result.unavailable);
    }
    for (const failure of report.reportFailures) {
      metrics.rateReportFailures++;
      logger.warn('rate report failed: the next report steps the rate; outcomes unchanged', {
        prefix: failure.prefix,
        error: failure.error,
      });
    }
  } finally {
    for (const run of runs) databases.release(run.entry);
  }
}
