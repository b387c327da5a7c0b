// An older upsert arriving after a newer update it refuses (a rule between fields): the upsert is written,
// and acknowledged only once the update's letter is in the dead-letter sink; when the sink does not take
// it, the upsert is redelivered and its redelivery reports the update again.
import { describe, expect, it } from 'vitest';
import { OutcomeLedger } from '../../../lib/ingest/handler/settle/outcome-ledger.js';
import { body, keyOf, lambdaContext, sqsRecord, testHandler } from './handler/support.js';

const CARTS = {
  type: 'object',
  required: ['total'],
  properties: { total: { type: 'number', minimum: 0 } },
  dependencies: { discount: ['coupon'] },
};

describe('an update refused by the older upsert that arrives after it', () => {
  it('is dead-lettered before the upsert is acknowledged; a sink that refuses it redelivers the upsert', async () => {
    const { handler, store, deadLetters, summaries } = testHandler({
      RESOURCES: JSON.stringify({ carts: CARTS }),
    });
    const update = sqsRecord(
      body({ resource: 'carts', op: 'update', id: 'c-1', seq: 2000, data: { discount: 5 } }),
    );
    const upsert = sqsRecord(
      body({ resource: 'carts', op: 'upsert', id: 'c-1', seq: 1000, data: { total: 5 } }),
    );
    // The update alone is valid: kept pending, acknowledged.
    expect(await handler({ Records: [update] }, lambdaContext(10_000))).toEqual({ batchItemFailures: [] });

    deadLetters.accept = () => false;
    const first = await handler({ Records: [upsert] }, lambdaContext(10_000));
    expect(first.batchItemFailures).toEqual([{ itemIdentifier: upsert.messageId }]);
    expect(summaries.at(-1)?.splits.RecordsRedelivered).toEqual({ 'dead-letter-failed': 1 });
    // Written all the same, without the refused update's field.
    const stored = store.record(keyOf('acme', 'carts', 'c-1'));
    expect(stored).toMatchObject({ total: 5 });
    expect(stored).not.toHaveProperty('discount');

    deadLetters.accept = () => true;
    expect(await handler({ Records: [upsert] }, lambdaContext(10_000))).toEqual({ batchItemFailures: [] });
    const letter = deadLetters.letters.get(update.messageId);
    expect(letter).toMatchObject({
      reason: 'schema-violation',
      errorName: 'ValidationError',
      tenant: 'acme',
      detail: expect.stringContaining('coupon'),
    });
    expect(JSON.parse(letter!.body)).toEqual(JSON.parse(update.body));
    expect(deadLetters.letters.has(upsert.messageId)).toBe(false);
    await handler.close();
  });
});

describe('OutcomeLedger: a written record reporting refused updates', () => {
  const letter = (messageId: string) => ({
    messageId,
    body: '{}',
    reason: 'schema-violation' as const,
    errorName: 'ValidationError',
    detail: 'd',
  });

  it('is acknowledged once every letter is stored, redelivered when one is not', () => {
    const records = [sqsRecord('a', 'm-0'), sqsRecord('b', 'm-1'), sqsRecord('c', 'm-2')];
    const ledger = new OutcomeLedger(records);
    ledger.settle('m-0', { kind: 'written', refused: [letter('u-1'), letter('u-2')] });
    ledger.settle('m-1', { kind: 'written', refused: [letter('u-3')] });
    // A letter for a record of this batch is that record's to report.
    ledger.settle('m-2', { kind: 'written', refused: [letter('m-1')] });
    expect(ledger.pendingLetters().map((l) => l.messageId)).toEqual(['u-1', 'u-2', 'u-3']);
    expect(ledger.fateOf('m-2')).toEqual({ state: 'written' });
    ledger.deadLettered('u-1');
    expect(ledger.fateOf('m-0')?.state).toBe('reporting');
    ledger.deadLettered('u-2');
    ledger.deadLetterFailed('u-3', new Error('full'));
    expect(ledger.fateOf('m-0')).toEqual({ state: 'written' });
    expect(ledger.fateOf('m-1')).toMatchObject({ state: 'redeliver', cause: 'dead-letter-failed' });
    expect(ledger.response()).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-1' }] });
    expect(ledger.counts()).toMatchObject({ written: 2, redelivered: 1 });
  });
});
