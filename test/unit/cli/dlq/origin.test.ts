// Where a letter's write comes from, for every kind of letter a dead-letter queue holds.
import type { Message } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { isHandlerLetter, originOf } from '../../../../lib/cli/dlq/origin.js';
import { queueArn, str } from './fake-sqs.js';

const num = (n: string) => ({ DataType: 'Number', StringValue: n });

describe('originOf', () => {
  it('a message SQS moved is its own origin: id, SentTimestamp, DeadLetterQueueSourceArn', () => {
    const m: Message = {
      MessageId: 'm-1',
      Attributes: { SentTimestamp: '1700000000000', DeadLetterQueueSourceArn: queueArn('in') },
    };
    expect(originOf(m)).toStrictEqual({ id: 'm-1', sentAt: 1_700_000_000_000, sourceArn: queueArn('in') });
    expect(isHandlerLetter(m)).toBe(false);
  });

  it("a copy SQS moved names its origin's id and send time in its origin attributes", () => {
    const m: Message = {
      MessageId: 'copy',
      MessageAttributes: { 's3-ingest-origin': str('first'), 's3-ingest-origin-sent': num('5') },
      Attributes: { SentTimestamp: '9', DeadLetterQueueSourceArn: queueArn('in') },
    };
    expect(originOf(m)).toStrictEqual({ id: 'first', sentAt: 5, sourceArn: queueArn('in') });
  });

  it("a function's letter names its message in sourceMessageId, s3-ingest-origin-sent and sourceQueueArn", () => {
    const m: Message = {
      MessageId: 'letter',
      MessageAttributes: {
        reason: str('record-not-found'),
        sourceMessageId: str('orig'),
        's3-ingest-origin-sent': num('7'),
        sourceQueueArn: str(queueArn('in')),
      },
      Attributes: { SentTimestamp: '99', DeadLetterQueueSourceArn: queueArn('elsewhere') },
    };
    // SQS's own source wins: a letter moved on from the rejected queue keeps where SQS says it came from.
    expect(originOf(m)).toStrictEqual({ id: 'orig', sentAt: 7, sourceArn: queueArn('elsewhere') });
    expect(isHandlerLetter(m)).toBe(true);
  });

  it("a function's letter without origin time or source has neither: never the letter's own send time", () => {
    const m: Message = {
      MessageId: 'letter',
      MessageAttributes: { reason: str('invalid-json'), sourceMessageId: str('orig') },
      Attributes: { SentTimestamp: '99' },
    };
    expect(originOf(m)).toStrictEqual({ id: 'orig' });
  });

  it('a letter of a copy the function refused names the original, whatever sourceMessageId says', () => {
    const m: Message = {
      MessageId: 'letter',
      MessageAttributes: { reason: str('x'), 's3-ingest-origin': str('first'), sourceMessageId: str('copy') },
    };
    expect(originOf(m).id).toBe('first');
  });

  it('empty, zero, negative, fractional and unsafe values count as absent', () => {
    for (const sent of ['', '0', '-5', '1.5', '9007199254740993', 'soon']) {
      const m: Message = {
        MessageId: 'm',
        MessageAttributes: { 's3-ingest-origin': str(''), 's3-ingest-origin-sent': num(sent) },
        Attributes: { SentTimestamp: sent },
      };
      expect(originOf(m), sent).toStrictEqual({ id: 'm' });
    }
    const letter: Message = { MessageAttributes: { reason: str('x'), sourceMessageId: str('') } };
    expect(originOf(letter)).toStrictEqual({ id: '' });
  });

  it('a bare message (no attributes of either kind) is its own origin, without time or source', () => {
    expect(originOf({ MessageId: 'm' })).toStrictEqual({ id: 'm' });
    expect(originOf({})).toStrictEqual({ id: '' });
    expect(isHandlerLetter({})).toBe(false);
  });
});
