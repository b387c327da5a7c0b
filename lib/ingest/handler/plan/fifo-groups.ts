import { S3IngestError } from '../../../errors/index.js';
import type { WriteOutcome } from '../run/write-outcome.js';
import type { OutcomeLedger } from '../settle/outcome-ledger.js';
import { messageGroupOf } from './message-group.js';

/**
 * A FIFO message group spans tenants within one batch. Tenants run under their own permits and pools, so
 * the handler cannot order one tenant's write after another's: the group's messages from its first
 * change of tenant on are redelivered (not applied), and a later batch starts the group there.
 */
export class FifoGroupSpansTenantsError extends S3IngestError {
  override readonly name = 'FifoGroupSpansTenantsError';

  constructor(
    readonly messageGroupId: string,
    readonly firstTenant: string,
    readonly tenant: string,
  ) {
    super(
      `message group ${JSON.stringify(messageGroupId)} moves from tenant ${firstTenant} to ${tenant} within one batch; the rest of the group is redelivered to keep its order`,
    );
  }
}

/** An earlier message of the same FIFO group was not applied in this batch, so this one may not be. */
export class FifoGroupBlockedError extends S3IngestError {
  override readonly name = 'FifoGroupBlockedError';

  constructor(
    readonly messageGroupId: string,
    readonly blockedBy: string,
  ) {
    super(
      `an earlier message (${blockedBy}) of message group ${JSON.stringify(messageGroupId)} is redelivered; this one follows it`,
    );
  }
}

type NotWritten = Extract<WriteOutcome, { kind: 'permanent' | 'transient' }>;

/**
 * The plan-time half of AWS's rule for FIFO partial batch responses: within a message group, once a
 * message is not applied (redelivered), no later message of that group in the batch may be applied
 * either; they are all returned in `batchItemFailures`, so SQS hands the group back in order.
 *
 * Walk the batch in order: `refuse` records a message that never becomes a write, `admit` a write and
 * answers `undefined` (go on) or the transient outcome it gets instead. Blocking comes from an earlier
 * message that is redelivered (a parse bug of ours), or from the group moving to another tenant (see
 * `FifoGroupSpansTenantsError`). Messages without a group (standard queues) are never blocked here.
 * The run stage keeps the rest of the rule: a group's writes form one chain (`chainsOf`), and a
 * transient failure blocks the rest of its chain.
 */
export class FifoGroupGate {
  readonly #tenantOf = new Map<string, string>();
  readonly #blockedBy = new Map<string, string>();

  /** A message that never becomes a write: a redelivered one blocks the rest of its group. */
  refuse(group: string | undefined, messageId: string, outcome: NotWritten): void {
    if (group === undefined || outcome.kind !== 'transient') return;
    if (!this.#blockedBy.has(group)) this.#blockedBy.set(group, messageId);
  }

  /** A write of `tenant`: `undefined` when it may run, else why it is redelivered instead. */
  admit(group: string | undefined, messageId: string, tenant: string): NotWritten | undefined {
    if (group === undefined) return undefined;
    const blockedBy = this.#blockedBy.get(group);
    if (blockedBy !== undefined) {
      const error = new FifoGroupBlockedError(group, blockedBy);
      return { kind: 'transient', cause: 'earlier-write-failed', error };
    }
    const first = this.#tenantOf.get(group);
    if (first === undefined) {
      this.#tenantOf.set(group, tenant);
      return undefined;
    }
    if (first === tenant) return undefined;
    this.#blockedBy.set(group, messageId);
    const error = new FifoGroupSpansTenantsError(group, first, tenant);
    return { kind: 'transient', cause: 'earlier-write-failed', error };
  }
}

/**
 * The settle-time half of the rule: a permanent failure waiting for the DLQ whose group has an earlier
 * message being redelivered is redelivered too (`earlier-write-failed`) instead of dead-lettered now, so
 * the response never acknowledges a group's message after one it returns. Run before the letters go out.
 */
export function withholdFifoLetters(ledger: OutcomeLedger): void {
  const blockedBy = new Map<string, string>();
  for (const { record, fate } of ledger.records()) {
    const group = messageGroupOf(record);
    if (group === undefined) continue;
    const blocker = blockedBy.get(group);
    if (blocker === undefined) {
      if (fate === undefined || fate.state === 'redeliver' || fate.state === 'out-of-turn')
        blockedBy.set(group, record.messageId);
    } else if (fate?.state === 'refused') {
      ledger.withholdLetter(
        record.messageId,
        'earlier-write-failed',
        new FifoGroupBlockedError(group, blocker),
      );
    }
  }
}
