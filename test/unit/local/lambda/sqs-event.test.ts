import { describe, expect, it, vi } from 'vitest';
import { createLambdaContext, toSqsRecord } from '../../../../lib/local/lambda/sqs-event.js';

const source = { eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:q', awsRegion: 'us-east-1' };

describe('toSqsRecord', () => {
  it('maps an SDK message to the record Lambda delivers', () => {
    const record = toSqsRecord(
      {
        MessageId: 'id-1',
        ReceiptHandle: 'rh',
        Body: 'hello',
        MD5OfBody: '5d41402abc4b2a76b9719d911017c592',
        Attributes: { ApproximateReceiveCount: '3', SentTimestamp: '1700000000000', MessageGroupId: 'g' },
        MessageAttributes: {
          reason: { DataType: 'String', StringValue: 'bad-json' },
          raw: { DataType: 'Binary', BinaryValue: new Uint8Array([255]) },
        },
      },
      source,
    );
    expect(record).toMatchObject({
      messageId: 'id-1',
      receiptHandle: 'rh',
      body: 'hello',
      md5OfBody: '5d41402abc4b2a76b9719d911017c592',
      eventSource: 'aws:sqs',
      ...source,
      attributes: { ApproximateReceiveCount: '3', SentTimestamp: '1700000000000', MessageGroupId: 'g' },
      messageAttributes: {
        reason: { stringValue: 'bad-json', dataType: 'String', stringListValues: [], binaryListValues: [] },
        raw: { binaryValue: '/w==', dataType: 'Binary' },
      },
    });
    expect(record.attributes).not.toHaveProperty('SequenceNumber');
  });
});

describe('createLambdaContext', () => {
  it('counts down to the deadline and never below zero', () => {
    vi.useFakeTimers({ now: 1_000_000 });
    try {
      const context = createLambdaContext({
        functionName: 'f',
        memoryLimitInMB: 256,
        region: 'eu-west-1',
        deadline: 1_000_000 + 3_000,
      });
      expect(context.getRemainingTimeInMillis()).toBe(3_000);
      vi.advanceTimersByTime(1_250);
      expect(context.getRemainingTimeInMillis()).toBe(1_750);
      vi.advanceTimersByTime(5_000);
      expect(context.getRemainingTimeInMillis()).toBe(0);
      expect(context.invokedFunctionArn).toBe('arn:aws:lambda:eu-west-1:000000000000:function:f');
      expect(context.logGroupName).toBe('/aws/lambda/f');
      expect(() => context.succeed('x')).toThrow(/promise/);
    } finally {
      vi.useRealTimers();
    }
  });
});
