import type { Logger } from '@aws-lambda-powertools/logger';
import type { Database } from '../../../db/database.js';
import { SemaphoreTimeoutError } from '../../../semaphore/errors.js';
import type { IngestWrite } from '../../message/types.js';
import type { OutcomeLedger } from '../settle/outcome-ledger.js';
import { type AppliedWrite, applyChain } from './apply-write.js';
import type { WriteOutcome } from './write-outcome.js';

export interface TenantWritesContext {
  readonly ledger: OutcomeLedger;
  /**
   * The writes' deadline (the invocation's cutoff, or sooner its holder giving up the writes left): after
   * it aborts no write starts, and queued and in-flight ones abort (each redelivered, cause `deadline`; or
   * out of turn, for deferral, when the holder gave them up for want of a slot: a `SemaphoreTimeoutError`).
   */
  readonly deadline: AbortSignal;
  readonly logger: Logger;
  /** Told of each write acknowledged as stale (covered by newer writes): the `StaleWrites` metric. */
  readonly onStale?: () => void;
}

/**
 * Applies one tenant's chains through its Database (its pool), the chains concurrently. A chain (the
 * writes of one record in the batch) is coalesced: one conditional S3 write of its merged effect, ordered
 * by each write's `seq`, with every write keeping its own outcome (`applyChain`). Each outcome goes to the
 * ledger once.
 */
export async function runTenantWrites(
  db: Database,
  chains: readonly (readonly IngestWrite[])[],
  { ledger, deadline, logger, onStale }: TenantWritesContext,
): Promise<void> {
  // allSettled, not all: if one chain throws (a bug), the others still run to their end before this returns,
  // so no write is in flight after the handler has answered. The first error is rethrown afterwards.
  const settled = await Promise.allSettled(
    chains.map(async (chain) => {
      const applied: AppliedWrite[] = deadline.aborted
        ? chain.map(() => ({
            outcome: { kind: 'transient', cause: 'deadline', error: deadline.reason },
            stale: false,
          }))
        : isOneRecord(chain)
          ? await applyChain(db.resource(chain[0]!.resource), chain, deadline)
          : await applyInMessageOrder(db, chain, deadline);
      chain.forEach((write, index) => {
        const { stale } = applied[index]!;
        const outcome = outOfTurnIfNoSlot(applied[index]!.outcome, deadline);
        if (stale) onStale?.();
        if (outcome.kind === 'transient' && (outcome.cause === 'storage' || outcome.cause === 'unexpected')) {
          const log = outcome.cause === 'storage' ? logger.warn : logger.error;
          log.call(logger, 'write failed, will be redelivered', {
            tenant: write.tenant,
            messageId: write.messageId,
            resource: write.resource,
            id: write.id,
            error: outcome.error,
          });
        }
        ledger.settle(write.messageId, outcome, write.tenant);
      });
    }),
  );
  const failure = settled.find((result) => result.status === 'rejected');
  if (failure !== undefined) throw failure.reason;
}

/**
 * A write cut by its holder giving up for want of a slot (the schedule booked up to the cutoff) is out of
 * turn, as a tenant refused its first slot is: deferred when it can be, so a hot prefix's records come back
 * as delayed copies instead of spending their receive count. One cut in flight may have landed; its copy
 * is then stale by its `seq`, as a redelivery would be.
 */
function outOfTurnIfNoSlot(outcome: WriteOutcome, deadline: AbortSignal): WriteOutcome {
  if (outcome.kind !== 'transient' || outcome.cause !== 'deadline') return outcome;
  const reason: unknown = deadline.reason;
  return reason instanceof SemaphoreTimeoutError ? { kind: 'out-of-turn', error: reason } : outcome;
}

function isOneRecord(chain: readonly IngestWrite[]): boolean {
  const [first] = chain;
  return chain.every((w) => w.resource === first?.resource && w.id === first?.id);
}

/**
 * A chain spanning several records (a FIFO message group, plan-batch.ts): each write on its own, in
 * message order; after a transient failure the rest of the chain is redelivered without being applied, as
 * the FIFO rule requires (redelivering them is harmless: `seq` makes a second application stale).
 */
async function applyInMessageOrder(
  db: Database,
  chain: readonly IngestWrite[],
  deadline: AbortSignal,
): Promise<AppliedWrite[]> {
  const applied: AppliedWrite[] = [];
  let blocked = false;
  for (const write of chain) {
    if (blocked) {
      applied.push({
        outcome: { kind: 'transient', cause: 'earlier-write-failed', error: undefined },
        stale: false,
      });
      continue;
    }
    const [result] = deadline.aborted
      ? [{ outcome: { kind: 'transient', cause: 'deadline', error: deadline.reason } as const, stale: false }]
      : await applyChain(db.resource(write.resource), [write], deadline);
    applied.push(result!);
    if (result!.outcome.kind === 'transient') blocked = true;
  }
  return applied;
}
