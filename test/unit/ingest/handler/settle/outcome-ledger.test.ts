import { describe, expect, it } from 'vitest';
import { InvalidMessageError } from '../../../../../lib/ingest/errors.js';
import { OutcomeAlreadySettledError, UnknownRecordError } from '../../../../../lib/ingest/handler/errors.js';
import type { WriteOutcome } from '../../../../../lib/ingest/handler/run/write-outcome.js';
import { OutcomeLedger } from '../../../../../lib/ingest/handler/settle/outcome-ledger.js';
import { sqsRecord } from '../support.js';

const written: WriteOutcome = { kind: 'written' };
const transient: WriteOutcome = { kind: 'transient', cause: 'storage', error: new Error('503') };
const permanent = (reason: 'invalid-json' | 'record-not-found' = 'invalid-json'): WriteOutcome => ({
  kind: 'permanent',
  reason,
  error: new InvalidMessageError('invalid-json', 'body is not JSON'),
});

function ledgerOf(n: number) {
  const records = Array.from({ length: n }, (_, i) => sqsRecord(`body-${i}`, `m-${i}`));
  return { records, ledger: new OutcomeLedger(records) };
}

describe('OutcomeLedger', () => {
  it('redelivers every record no stage reached, by construction', () => {
    const { ledger } = ledgerOf(3);
    ledger.settle('m-1', written);
    expect(ledger.response()).toEqual({
      batchItemFailures: [{ itemIdentifier: 'm-0' }, { itemIdentifier: 'm-2' }],
    });
    expect(ledger.counts()).toMatchObject({ written: 1, deadLettered: 0, redelivered: 2 });
    // A record no stage reached was left by a bug of ours: its cause says so.
    expect(ledger.counts().redeliveredByCause).toEqual(new Map([['unexpected', 2]]));
  });

  it('refuses to overwrite a final outcome with a typed error and keeps the first', () => {
    const { ledger } = ledgerOf(2);
    ledger.settle('m-0', written);
    ledger.settle('m-1', transient);
    const second = (() => {
      try {
        ledger.settle('m-0', { kind: 'transient', cause: 'permits-unavailable', error: undefined });
      } catch (error) {
        return error;
      }
    })();
    expect(second).toBeInstanceOf(OutcomeAlreadySettledError);
    expect(second).toMatchObject({
      name: 'OutcomeAlreadySettledError',
      messageId: 'm-0',
      settled: 'written',
    });
    expect(() => ledger.settle('m-1', written)).toThrow(OutcomeAlreadySettledError);
    expect(ledger.fateOf('m-0')).toEqual({ state: 'written' });
    expect(ledger.fateOf('m-1')).toMatchObject({ state: 'redeliver', cause: 'storage' });
    expect(ledger.response()).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-1' }] });
  });

  it('an out-of-turn record waits for the deferral port: acknowledged once deferred, redelivered if not', () => {
    const { ledger, records } = ledgerOf(4);
    const turn = new Error('no turn');
    for (const id of ['m-0', 'm-1', 'm-2']) ledger.settle(id, { kind: 'out-of-turn', error: turn }, 'acme');
    ledger.settle('m-3', written);
    expect(ledger.pendingDeferrals()).toEqual(records.slice(0, 3).map((record) => ({ record, error: turn })));
    // Still pending: redelivered (permits-unavailable) if no stage settles it.
    expect(ledger.counts()).toMatchObject({ written: 1, deferred: 0, redelivered: 3 });
    expect(ledger.counts().redeliveredByCause).toEqual(new Map([['permits-unavailable', 3]]));
    ledger.deferred('m-0');
    ledger.notDeferred('m-1');
    expect(ledger.fateOf('m-0')).toEqual({ state: 'deferred' });
    expect(ledger.fateOf('m-1')).toEqual({ state: 'redeliver', cause: 'permits-unavailable', error: turn });
    expect(ledger.pendingDeferrals().map((p) => p.record.messageId)).toEqual(['m-2']);
    expect(ledger.response()).toEqual({
      batchItemFailures: [{ itemIdentifier: 'm-1' }, { itemIdentifier: 'm-2' }],
    });
    expect(ledger.counts()).toMatchObject({ written: 1, deferred: 1, deadLettered: 0, redelivered: 2 });
    // Final: neither settles twice, and a record not out of turn has no deferral to settle.
    expect(() => ledger.deferred('m-0')).toThrow(OutcomeAlreadySettledError);
    expect(() => ledger.notDeferred('m-1')).toThrow(OutcomeAlreadySettledError);
    expect(() => ledger.deferred('m-3')).toThrow(OutcomeAlreadySettledError);
    expect(() => ledger.settle('m-2', written)).toThrow(OutcomeAlreadySettledError);
    expect(ledger.fateOf('m-0')).toEqual({ state: 'deferred' });
  });

  it('a permanent failure waits for the DLQ: acknowledged once dead-lettered, redelivered if not', () => {
    const { ledger, records } = ledgerOf(3);
    ledger.settle('m-0', permanent());
    ledger.settle('m-1', permanent('record-not-found'), 'acme');
    ledger.settle('m-2', permanent());
    expect(ledger.pendingLetters()).toEqual([
      expect.objectContaining({ messageId: 'm-0', body: records[0]!.body, reason: 'invalid-json' }),
      expect.objectContaining({ messageId: 'm-1', reason: 'record-not-found', tenant: 'acme' }),
      expect.objectContaining({ messageId: 'm-2' }),
    ]);
    expect(ledger.pendingLetters()[0]).not.toHaveProperty('tenant');
    // Before the DLQ answers, a refused record is not acknowledged.
    expect(ledger.response().batchItemFailures).toHaveLength(3);
    ledger.deadLettered('m-0');
    ledger.deadLetterFailed('m-1', new Error('queue gone'));
    expect(ledger.response()).toEqual({
      batchItemFailures: [{ itemIdentifier: 'm-1' }, { itemIdentifier: 'm-2' }],
    });
    expect(ledger.counts()).toMatchObject({ written: 0, deadLettered: 1, redelivered: 2 });
    expect(ledger.counts().redeliveredByCause).toEqual(new Map([['dead-letter-failed', 2]]));
    expect(ledger.counts().deadLetteredByReason).toEqual(new Map([['invalid-json', 1]]));
    expect(ledger.pendingLetters().map((l) => l.messageId)).toEqual(['m-2']);
  });

  it('dead-letter transitions apply only to refused records, once', () => {
    const { ledger } = ledgerOf(3);
    ledger.settle('m-0', written);
    ledger.settle('m-1', permanent());
    expect(() => ledger.deadLettered('m-0')).toThrow(OutcomeAlreadySettledError);
    expect(() => ledger.deadLetterFailed('m-2')).toThrow(OutcomeAlreadySettledError);
    ledger.deadLettered('m-1');
    expect(() => ledger.deadLetterFailed('m-1')).toThrow(OutcomeAlreadySettledError);
    expect(() => ledger.settle('m-1', written)).toThrow(OutcomeAlreadySettledError);
    expect(ledger.fateOf('m-1')).toMatchObject({ state: 'dead-lettered' });
  });

  it('a refused transition names both states, so the bug it reveals is readable in the log', () => {
    const { ledger } = ledgerOf(4);
    ledger.settle('m-0', written);
    ledger.settle('m-1', transient);
    const refusal = (fn: () => void) => {
      try {
        fn();
      } catch (err) {
        const e = err as OutcomeAlreadySettledError;
        return [e.settled, e.attempted];
      }
      return undefined;
    };
    expect(refusal(() => ledger.deadLettered('m-0'))).toEqual(['written', 'dead-lettered']);
    expect(refusal(() => ledger.deadLetterFailed('m-1'))).toEqual(['redeliver', 'redeliver']);
    expect(refusal(() => ledger.withholdLetter('m-2', 'earlier-write-failed'))).toEqual([
      'unsettled',
      'redeliver',
    ]);
    expect(() => ledger.deadLettered('m-3')).toThrow(
      'record m-3 is already unsettled; refusing to make it dead-lettered',
    );
  });

  it('a withheld letter is a final redelivery with its cause, never sent', () => {
    const { ledger } = ledgerOf(2);
    ledger.settle('m-0', permanent());
    ledger.settle('m-1', permanent());
    const cause = new Error('earlier message of the group redelivered');
    ledger.withholdLetter('m-0', 'earlier-write-failed', cause);
    expect(ledger.fateOf('m-0')).toEqual({ state: 'redeliver', cause: 'earlier-write-failed', error: cause });
    expect(ledger.pendingLetters().map((l) => l.messageId)).toEqual(['m-1']);
    expect(ledger.counts().redeliveredByCause).toEqual(
      new Map([
        ['earlier-write-failed', 1],
        ['dead-letter-failed', 1],
      ]),
    );
  });

  it('a letter carries the tenant and the message group only when there are some', () => {
    const plain = sqsRecord('not json', 'm-plain');
    const grouped = {
      ...sqsRecord('not json', 'm-grouped'),
      eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:ingest.fifo',
      attributes: { ...sqsRecord('x').attributes, MessageGroupId: 'g-1' },
    };
    const ledger = new OutcomeLedger([plain, grouped]);
    ledger.settle('m-plain', permanent());
    ledger.settle('m-grouped', permanent(), 'acme');
    expect(ledger.pendingLetters()).toStrictEqual([
      {
        messageId: 'm-plain',
        body: 'not json',
        reason: 'invalid-json',
        errorName: 'InvalidMessageError',
        detail: 'invalid message (invalid-json): body is not JSON',
        source: {
          originId: 'm-plain',
          originSentAt: plain.attributes.SentTimestamp,
          sourceArn: plain.eventSourceARN,
        },
      },
      {
        messageId: 'm-grouped',
        body: 'not json',
        reason: 'invalid-json',
        errorName: 'InvalidMessageError',
        detail: 'invalid message (invalid-json): body is not JSON',
        tenant: 'acme',
        messageGroupId: 'g-1',
        source: {
          originId: 'm-grouped',
          originSentAt: grouped.attributes.SentTimestamp,
          sourceArn: 'arn:aws:sqs:us-east-1:000000000000:ingest.fifo',
        },
      },
    ]);
  });

  it('a message id repeated in the batch is one record: one fate, listed once', () => {
    const first = sqsRecord('a', 'm-dup');
    const ledger = new OutcomeLedger([first, sqsRecord('b', 'm-other'), sqsRecord('a again', 'm-dup')]);
    expect(ledger.response().batchItemFailures).toEqual([
      { itemIdentifier: 'm-dup' },
      { itemIdentifier: 'm-other' },
    ]);
    ledger.settle('m-dup', permanent());
    expect(ledger.pendingLetters().map((l) => [l.messageId, l.body])).toEqual([['m-dup', 'a']]);
    expect(ledger.counts()).toMatchObject({ written: 0, redelivered: 2 });
  });

  it('names a record that is not in the batch', () => {
    const { ledger } = ledgerOf(1);
    expect(() => ledger.settle('other', written)).toThrow(UnknownRecordError);
  });
});
