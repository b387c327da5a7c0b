import type { Logger } from '@aws-lambda-powertools/logger';
import type { SQSRecord } from 'aws-lambda';
import { exponentialDelay } from '../../../backoff/index.js';
import { SemaphoreTimeoutError } from '../../../semaphore/errors.js';
import { type DeferralPort, deferralsOf } from './deferral-port.js';
import type { OutcomeLedger } from './outcome-ledger.js';
import { rejectOnAbort } from './send-dead-letters.js';

/** When a tenant's records go back to their queue as delayed copies instead of waiting for their slots. */
export const DEFERRAL_POLICY = {
  /**
   * How long a tenant whose records can be deferred may wait for its first slot, ms. A waiting tenant holds
   * its invocation, and with it one of the queue's few concurrent slots, so every other tenant's messages
   * wait behind it (docs/decisions/defer-out-of-turn.md); a schedule booked further ahead than this sends
   * its records back as delayed copies, due when its first free slot is.
   */
  turnWaitMs: 1_000,
  /**
   * Deferrals a record may have; past this it is redelivered instead, so SQS's receive count and redrive
   * policy bound it again (a prefix that never frees cannot keep a record circulating for ever). A copy
   * comes back when its prefix's first free slot was due, or after the delays below (20 deferrals: about
   * 2 minutes).
   */
  maxDeferrals: 20,
  /** Delay of a record's first deferred copy, doubling every 4 deferrals. */
  firstDelaySeconds: 1,
  /** The longest delay of a deferred copy (SQS allows 900). */
  maxDelaySeconds: 30,
} as const;

/** Whether a tenant's records could be deferred if its prefix has no slot for them: no FIFO group, not at the cap. */
export function canDefer(plan: { readonly ordered: boolean; readonly deferrals: number }): boolean {
  return !plan.ordered && plan.deferrals < DEFERRAL_POLICY.maxDeferrals;
}

/**
 * The delay of a deferred copy: until its prefix's first free slot (`freeAtMs`, epoch ms, rounded down to
 * whole seconds), so the copy comes back for its turn; without one, `FIRST x 2^floor(deferrals / 4)`.
 * Between `FIRST` and `MAX` seconds either way.
 */
export function deferralDelaySeconds(deferrals: number, freeAtMs?: number, nowMs = Date.now()): number {
  if (freeAtMs !== undefined && Number.isFinite(freeAtMs) && freeAtMs > nowMs) {
    const seconds = Math.floor((freeAtMs - nowMs) / 1000);
    return Math.min(Math.max(seconds, DEFERRAL_POLICY.firstDelaySeconds), DEFERRAL_POLICY.maxDelaySeconds);
  }
  // One doubling per 4 deferrals: wait n+1 of the exponential from FIRST to MAX.
  const doublings = Number.isInteger(deferrals) && deferrals > 0 ? Math.floor(deferrals / 4) : 0;
  return exponentialDelay(
    doublings + 1,
    DEFERRAL_POLICY.firstDelaySeconds,
    DEFERRAL_POLICY.maxDelaySeconds,
    'none',
  );
}

/** A record the port may take: from a standard queue (a FIFO one's group order forbids it), under the cap. */
function deferrable(record: SQSRecord): boolean {
  const fifo = typeof record.eventSourceARN === 'string' && record.eventSourceARN.endsWith('.fifo');
  return !fifo && deferralsOf(record) < DEFERRAL_POLICY.maxDeferrals;
}

/**
 * Settles every out-of-turn record of the ledger: `deferred` once the port has put its copy in its queue
 * (delayed by `deferralDelaySeconds`), else `redeliver` (no port, a FIFO record, at the cap, not taken,
 * the port failing, or not answering before `signal`, the invocation's settle signal). A record is
 * acknowledged only once its copy is safely queued.
 */
export async function deferOutOfTurn(
  ledger: OutcomeLedger,
  port: DeferralPort | undefined,
  logger: Logger,
  signal: AbortSignal,
): Promise<void> {
  const pending = ledger.pendingDeferrals();
  if (pending.length === 0) return;
  const now = Date.now();
  // Stryker disable next-line ArrayDeclaration: without a port nothing is sent, and every record is settled `notDeferred` either way.
  const eligible = port === undefined ? [] : pending.filter(({ record }) => deferrable(record));
  const notDeferred = new Set(
    pending.filter((p) => !eligible.includes(p)).map(({ record }) => record.messageId),
  );
  if (port !== undefined && eligible.length > 0) {
    const deferrals = eligible.map(({ record, error }) => ({
      record,
      delaySeconds: deferralDelaySeconds(
        deferralsOf(record),
        error instanceof SemaphoreTimeoutError ? error.freeAt : undefined,
        now,
      ),
    }));
    try {
      // A port that ignores its signal must not hold the invocation past the settle budget.
      const refused = await Promise.race([port.defer(deferrals, { signal }), rejectOnAbort(signal)]);
      for (const id of refused) notDeferred.add(id);
    } catch (error) {
      for (const { record } of eligible) notDeferred.add(record.messageId);
      logger.warn('deferral failed: records redelivered', { error, records: eligible.length });
    }
  }
  for (const { record } of pending) {
    if (notDeferred.has(record.messageId)) ledger.notDeferred(record.messageId);
    else ledger.deferred(record.messageId);
  }
}
