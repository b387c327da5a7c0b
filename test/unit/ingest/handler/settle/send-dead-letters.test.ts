// sendDeadLetters, the settle step between the ledger and the dead-letter sink: what becomes of each refused
// record for each answer of the sink (took it, refused it, failed, never answered), that the sink gets the
// settle signal and is not waited for past it, and what is logged. Issue 14's mutation testing found these
// asserted only through the handler, where an in-memory sink answers synchronously.
import type { Logger } from '@aws-lambda-powertools/logger';
import { describe, expect, it } from 'vitest';
import { InvalidMessageError } from '../../../../../lib/ingest/errors.js';
import type {
  DeadLetter,
  DeadLetterSendOptions,
} from '../../../../../lib/ingest/handler/settle/dead-letter-queue.js';
import type { DeadLetterSink } from '../../../../../lib/ingest/handler/settle/dead-letter-sink.js';
import { OutcomeLedger } from '../../../../../lib/ingest/handler/settle/outcome-ledger.js';
import {
  rejectOnAbort,
  sendDeadLetters,
} from '../../../../../lib/ingest/handler/settle/send-dead-letters.js';
import { sqsRecord } from '../support.js';

interface LogLine {
  readonly level: 'error' | 'warn';
  readonly message: string;
  readonly fields: Record<string, unknown>;
}

function recordingLogger() {
  const lines: LogLine[] = [];
  const at =
    (level: LogLine['level']) =>
    (message: string, fields: Record<string, unknown> = {}) =>
      lines.push({ level, message, fields });
  return { logger: { error: at('error'), warn: at('warn') } as unknown as Logger, lines };
}

/** A ledger of `refused` records (one per tenant name) plus one written record. */
function ledgerOf(tenants: readonly string[]) {
  const records = tenants.map((t) => sqsRecord(`{"tenant":"${t}"}`));
  const written = sqsRecord('{}');
  const ledger = new OutcomeLedger([...records, written]);
  for (const [i, r] of records.entries()) {
    const error = new InvalidMessageError('schema', `op: required ${i}`);
    ledger.settle(r.messageId, { kind: 'permanent', reason: 'schema', error }, tenants[i]);
  }
  ledger.settle(written.messageId, { kind: 'written' });
  return { ledger, ids: records.map((r) => r.messageId), written: written.messageId };
}

/** A sink that answers after a macrotask (as SQS does), refusing the ids `refuse` picks. */
function asyncSink(refuse: (letter: DeadLetter) => boolean = () => false) {
  const calls: { letters: readonly DeadLetter[]; options: DeadLetterSendOptions | undefined }[] = [];
  const sink: DeadLetterSink = {
    send: async (letters, options) => {
      calls.push({ letters, options });
      await new Promise((r) => setTimeout(r, 1));
      return new Set(letters.filter(refuse).map((l) => l.messageId));
    },
  };
  return { sink, calls };
}

describe('sendDeadLetters', () => {
  it('dead-letters what the sink took and makes what it refused a final redelivery', async () => {
    const { ledger, ids, written } = ledgerOf(['acme', 'globex', 'initech']);
    const { sink, calls } = asyncSink((l) => l.tenant === 'globex');
    const { logger, lines } = recordingLogger();
    const signal = new AbortController().signal;
    await sendDeadLetters(ledger, sink, logger, signal);

    expect(calls).toHaveLength(1);
    expect(calls[0]!.options).toEqual({ signal });
    expect(calls[0]!.letters.map((l) => l.messageId)).toEqual(ids);
    expect(ledger.fateOf(ids[0]!)).toMatchObject({ state: 'dead-lettered', reason: 'schema' });
    expect(ledger.fateOf(ids[1]!)).toEqual({
      state: 'redeliver',
      cause: 'dead-letter-failed',
      error: undefined,
    });
    expect(ledger.fateOf(ids[2]!)).toMatchObject({ state: 'dead-lettered', reason: 'schema' });
    expect(ledger.response().batchItemFailures).toEqual([{ itemIdentifier: ids[1] }]);
    expect(ledger.fateOf(written)).toEqual({ state: 'written' });
    // Each stored letter is logged with what an operator searches by; nothing is logged for the refused one.
    expect(lines).toEqual([
      {
        level: 'warn',
        message: 'message dead-lettered',
        fields: {
          messageId: ids[0],
          tenant: 'acme',
          reason: 'schema',
          errorName: 'InvalidMessageError',
          detail: 'invalid message (schema): op: required 0',
        },
      },
      expect.objectContaining({ level: 'warn', message: 'message dead-lettered' }),
    ]);
    expect(lines[1]!.fields.messageId).toBe(ids[2]);
  });

  it('a sink that fails redelivers every letter with its error, logged once with the count', async () => {
    const { ledger, ids } = ledgerOf(['acme', 'globex']);
    const boom = new Error('socket hang up');
    const { logger, lines } = recordingLogger();
    await sendDeadLetters(
      ledger,
      { send: async () => Promise.reject(boom) },
      logger,
      new AbortController().signal,
    );
    for (const id of ids)
      expect(ledger.fateOf(id)).toEqual({ state: 'redeliver', cause: 'dead-letter-failed', error: boom });
    expect(lines).toEqual([
      {
        level: 'error',
        message: 'dead-letter sink failed: letters redelivered',
        fields: { error: boom, letters: 2 },
      },
    ]);
  });

  it('stops waiting for a sink that ignores its signal once the signal aborts', async () => {
    const { ledger, ids } = ledgerOf(['acme']);
    const controller = new AbortController();
    const never: DeadLetterSink = { send: () => new Promise(() => {}) };
    const { logger } = recordingLogger();
    const done = sendDeadLetters(ledger, never, logger, controller.signal);
    const reason = new Error('settle budget spent');
    setTimeout(() => controller.abort(reason), 1);
    await done;
    expect(ledger.fateOf(ids[0]!)).toEqual({
      state: 'redeliver',
      cause: 'dead-letter-failed',
      error: reason,
    });
  });

  it('with the signal already aborted, does not wait for the sink', async () => {
    const { ledger, ids } = ledgerOf(['acme']);
    const reason = new Error('past the cutoff');
    const never: DeadLetterSink = { send: () => new Promise(() => {}) };
    await sendDeadLetters(ledger, never, recordingLogger().logger, AbortSignal.abort(reason));
    expect(ledger.fateOf(ids[0]!)).toMatchObject({ state: 'redeliver', error: reason });
  });

  it('a sink that answers before the signal aborts is not cut short by it', async () => {
    const { ledger, ids } = ledgerOf(['acme']);
    const { sink } = asyncSink();
    await sendDeadLetters(ledger, sink, recordingLogger().logger, new AbortController().signal);
    expect(ledger.fateOf(ids[0]!)).toMatchObject({ state: 'dead-lettered' });
  });

  it('does not call the sink when nothing was refused', async () => {
    const { ledger } = ledgerOf([]);
    const { sink, calls } = asyncSink();
    const { logger, lines } = recordingLogger();
    await sendDeadLetters(ledger, sink, logger, new AbortController().signal);
    expect(calls).toEqual([]);
    expect(lines).toEqual([]);
  });
});

describe('rejectOnAbort', () => {
  it('rejects with the reason when the signal aborts, at once when it already has, never otherwise', async () => {
    const controller = new AbortController();
    let settled = false;
    const pending = rejectOnAbort(controller.signal).catch((e: unknown) => {
      settled = true;
      return e;
    });
    await new Promise((r) => setTimeout(r, 1));
    expect(settled).toBe(false);
    controller.abort('late');
    expect(await pending).toBe('late');
    await expect(rejectOnAbort(AbortSignal.abort('early'))).rejects.toBe('early');
  });
});
