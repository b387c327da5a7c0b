import {
  ConflictError,
  RecordExistsError,
  RecordNotFoundError,
  ValidationError,
} from '../../../db/errors.js';
import type { Document, Resource } from '../../../db/resource.js';
import type { SequencedWrite } from '../../../db/sequenced-state.js';
import type { RefusedUpdate, SequencedOutcome } from '../../../db/sequenced-writer.js';
import { isTransient } from '../../../errors/index.js';
import type { IngestWrite } from '../../message/types.js';
import { RecordVanishedError } from '../errors.js';
import type { DeadLetter } from '../settle/dead-letter-queue.js';
import { WRITTEN, type WriteOutcome } from './write-outcome.js';

/** One write's outcome, and whether newer writes already covered its effect (the `StaleWrites` metric). */
export interface AppliedWrite {
  readonly outcome: WriteOutcome;
  /** Acknowledged without changing anything: a duplicate, or older than what is stored. */
  readonly stale: boolean;
}

/** The write as the store orders it: its `seq`, ties broken by the SQS message id (its origin's, for a copy). */
export function sequencedWrite(write: IngestWrite): SequencedWrite {
  const stamp = { seq: write.seq, tie: write.originId ?? write.messageId };
  if (write.op === 'delete') return { op: 'delete', stamp };
  return { op: write.op, stamp, data: write.data as Document };
}

/**
 * The letter of an update acknowledged earlier that `base`'s record refused. Its message is gone, so the
 * body is that update as a contract-v1 message rebuilt from what the store kept (its record, `seq` and
 * fields; not its `priority` or `key`), filed under its own message id.
 */
function refusedLetter(base: IngestWrite, refused: RefusedUpdate): DeadLetter {
  const { tenant, resource, id } = base;
  const { seq, tie } = refused.stamp;
  return {
    messageId: tie,
    body: JSON.stringify({ v: 1, tenant, resource, op: 'update', id, data: refused.data, seq }),
    reason: 'schema-violation',
    errorName: refused.error.name,
    detail: refused.error.message,
    tenant,
  };
}

function writtenOutcome(write: IngestWrite, refused: readonly RefusedUpdate[] | undefined): WriteOutcome {
  if (refused === undefined) return WRITTEN;
  return { kind: 'written', refused: refused.map((r) => refusedLetter(write, r)) };
}

function outcomeOf(write: IngestWrite, result: SequencedOutcome): AppliedWrite {
  switch (result.kind) {
    case 'applied':
      return { outcome: writtenOutcome(write, result.refusedUpdates), stale: false };
    case 'pending':
      return { outcome: WRITTEN, stale: false };
    case 'stale':
      return { outcome: writtenOutcome(write, result.refusedUpdates), stale: true };
    case 'rejected':
      if (result.error instanceof ValidationError) {
        return {
          outcome: { kind: 'permanent', reason: 'schema-violation', error: result.error },
          stale: false,
        };
      }
      // An id derived from the message (its key or SQS id) is this message's own record: an earlier
      // delivery created it and later writes changed it.
      if (write.idSource !== 'message') return { outcome: WRITTEN, stale: true };
      return { outcome: { kind: 'permanent', reason: 'record-exists', error: result.error }, stale: false };
  }
}

/**
 * Applies the writes of one record (a chain of the batch plan) through the tenant's pool as one
 * `Resource.applySequenced` call: one conditional S3 PUT of their merged effect (none if nothing changes),
 * each write keeping its own outcome. `signal` is the invocation's deadline: aborting it rejects the call
 * whether it is queued or in flight, and every write of the chain is then redelivered.
 *
 * Order comes from each write's `seq` (ties: message id), never from arrival: an older write arriving after
 * a newer one is acknowledged as stale, an update of a record not created yet is kept pending, and a
 * redelivered insert is recognised by its stamp. An explicit-id insert finding a record with other content
 * is a permanent `record-exists`.
 */
export async function applyChain(
  resource: Resource<Document>,
  chain: readonly IngestWrite[],
  signal: AbortSignal,
): Promise<AppliedWrite[]> {
  const first = chain[0];
  if (first === undefined) return [];
  const priority = Math.max(...chain.map((w) => w.priority));
  try {
    const results = await resource.applySequenced(first.id, chain.map(sequencedWrite), { priority, signal });
    return chain.map((write, index) => outcomeOf(write, results[index]!));
  } catch (err) {
    const outcome = classifyFailure(err, signal);
    return chain.map(() => ({ outcome, stale: false }));
  }
}

/** One write alone: `applyChain` of a chain of one. */
export async function applyWrite(
  resource: Resource<Document>,
  write: IngestWrite,
  signal: AbortSignal,
): Promise<WriteOutcome> {
  const [applied] = await applyChain(resource, [write], signal);
  return applied!.outcome;
}

/**
 * Permanent only when retrying can never help (the data is invalid, the record to update is missing);
 * anything else is redelivered, so nothing is lost. The error taxonomy tells a storage failure (throttling,
 * timeouts, 5xx, resets, a concurrent change) from an unexpected one, which is redelivered all the same
 * but reported as a bug.
 */
export function classifyFailure(err: unknown, signal: AbortSignal): WriteOutcome {
  if (err instanceof ValidationError) return { kind: 'permanent', reason: 'schema-violation', error: err };
  if (err instanceof RecordNotFoundError)
    return { kind: 'permanent', reason: 'record-not-found', error: err };
  if (err instanceof RecordExistsError) return { kind: 'permanent', reason: 'record-exists', error: err };
  if (signal.aborted) return { kind: 'transient', cause: 'deadline', error: err };
  if (err instanceof ConflictError || err instanceof RecordVanishedError || isTransient(err))
    return { kind: 'transient', cause: 'storage', error: err };
  return { kind: 'transient', cause: 'unexpected', error: err };
}
