import { describe, expect, it } from 'vitest';
import { readBatchResponse } from '../../../../lib/local/lambda/batch-response.js';

const ids = new Set(['m1', 'm2', 'm3']);

describe('readBatchResponse (Lambda ReportBatchItemFailures rules)', () => {
  it.each([
    ['undefined', undefined],
    ['null', null],
    ['an empty object', {}],
    ['a null list', { batchItemFailures: null }],
    ['an empty list', { batchItemFailures: [] }],
  ])('treats %s as complete success', (_label, response) => {
    expect(readBatchResponse(response, ids)).toEqual({ kind: 'success' });
  });

  it('reports the listed records as failed and no others', () => {
    const verdict = readBatchResponse(
      { batchItemFailures: [{ itemIdentifier: 'm2' }, { itemIdentifier: 'm2' }] },
      ids,
    );
    expect(verdict.kind).toBe('partial');
    expect(verdict.kind === 'partial' && [...verdict.failedMessageIds]).toEqual(['m2']);
  });

  it.each([
    ['a string', 'ok'],
    ['an array', [{ itemIdentifier: 'm1' }]],
    ['a non-list batchItemFailures', { batchItemFailures: { itemIdentifier: 'm1' } }],
    ['an empty itemIdentifier', { batchItemFailures: [{ itemIdentifier: '' }] }],
    ['a null itemIdentifier', { batchItemFailures: [{ itemIdentifier: null }] }],
    ['a misspelt key', { batchItemFailures: [{ itemIdentifer: 'm1' }] }],
    ['an unknown message id', { batchItemFailures: [{ itemIdentifier: 'm1' }, { itemIdentifier: 'zz' }] }],
  ])('treats %s as complete failure', (_label, response) => {
    expect(readBatchResponse(response, ids).kind).toBe('invalid-response');
  });
});
