import type { Logger } from '@aws-lambda-powertools/logger';
import type { DeadLetterSink } from './dead-letter-sink.js';
import type { OutcomeLedger } from './outcome-ledger.js';

/**
 * Moves every permanent failure in the ledger to the dead-letter sink, then makes it final: `dead-lettered`
 * when the sink took it, `redeliver` when it did not (or the sink failed as a whole, or could not answer
 * before `signal`, the invocation's settle signal, aborted), so a record is acknowledged only once it is
 * safely stored. No letters: no call to the sink.
 */
export async function sendDeadLetters(
  ledger: OutcomeLedger,
  sink: DeadLetterSink,
  logger: Logger,
  signal: AbortSignal,
): Promise<void> {
  const letters = ledger.pendingLetters();
  if (letters.length === 0) return;
  let notStored: ReadonlySet<string>;
  let failure: unknown;
  try {
    const sent = sink.send(letters, { signal });
    // A sink that ignores its signal must not hold the invocation past the cutoff: stop waiting for it.
    notStored = await Promise.race([sent, rejectOnAbort(signal)]);
  } catch (error) {
    failure = error;
    notStored = new Set(letters.map((l) => l.messageId));
    logger.error('dead-letter sink failed: letters redelivered', { error, letters: letters.length });
  }
  for (const letter of letters) {
    if (notStored.has(letter.messageId)) {
      ledger.deadLetterFailed(letter.messageId, failure);
      continue;
    }
    ledger.deadLettered(letter.messageId);
    logger.warn('message dead-lettered', {
      messageId: letter.messageId,
      tenant: letter.tenant,
      reason: letter.reason,
      errorName: letter.errorName,
      detail: letter.detail,
    });
  }
}

/** Rejects with the signal's reason once it aborts (at once if it already has). */
export function rejectOnAbort(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    // An aborted signal dispatches no more events: the listener below then never runs.
    if (signal.aborted) reject(signal.reason);
    // Stryker disable next-line ObjectLiteral,BooleanLiteral: equivalent, a signal dispatches 'abort' only once
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}
