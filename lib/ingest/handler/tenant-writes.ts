import type { Logger } from '@aws-lambda-powertools/logger';
import type { Database } from '../../db/database.js';
import type { IngestWrite } from '../message/types.js';
import { applyWrite } from './apply-write.js';
import type { OutcomeLedger } from './outcome-ledger.js';
import type { WriteOutcome } from './write-outcome.js';

export interface TenantWritesContext {
  readonly ledger: OutcomeLedger;
  /** The invocation's deadline: after it aborts no write starts, and queued and in-flight ones abort. */
  readonly deadline: AbortSignal;
  readonly logger: Logger;
}

/**
 * Applies one tenant's chains through its Database (its pool): the writes of a chain one after the other
 * in message order, the chains concurrently. A transient failure blocks the rest of its chain, which is
 * redelivered too, so redelivery keeps the order. Each write's outcome goes to the ledger once.
 */
export async function runTenantWrites(
  db: Database,
  chains: readonly (readonly IngestWrite[])[],
  { ledger, deadline, logger }: TenantWritesContext,
): Promise<void> {
  // allSettled, not all: if one chain throws (a bug), the others still run to their end before this returns,
  // so no write is in flight after the handler has answered. The first error is rethrown afterwards.
  const settled = await Promise.allSettled(
    chains.map(async (chain) => {
      let blocked = false;
      for (const write of chain) {
        let outcome: WriteOutcome;
        if (blocked) {
          // Applying it now would reorder it before the earlier write's redelivery.
          outcome = { kind: 'transient', cause: 'earlier-write-failed', error: undefined };
        } else if (deadline.aborted) {
          outcome = { kind: 'transient', cause: 'deadline', error: deadline.reason };
        } else {
          outcome = await applyWrite(db.resource(write.resource), write, deadline);
        }
        if (outcome.kind === 'transient') {
          blocked = true;
          if (outcome.cause === 'storage' || outcome.cause === 'unexpected') {
            const log = outcome.cause === 'storage' ? logger.warn : logger.error;
            log.call(logger, 'write failed, will be redelivered', {
              tenant: write.tenant,
              messageId: write.messageId,
              resource: write.resource,
              id: write.id,
              error: outcome.error,
            });
          }
        }
        ledger.settle(write.messageId, outcome, write.tenant);
      }
    }),
  );
  const failure = settled.find((result) => result.status === 'rejected');
  if (failure !== undefined) throw failure.reason;
}
