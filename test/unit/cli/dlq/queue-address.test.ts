import type { SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { isQueue, QueueUrls, queueOfArn } from '../../../../lib/cli/dlq/queue-address.js';
import { FakeClock, FakeSqs, queueArn, queueUrl } from './fake-sqs.js';

describe('queue addresses', () => {
  it('reads account and name from a queue ARN, FIFO and other partitions included', () => {
    expect(queueOfArn('arn:aws:sqs:eu-west-1:123456789012:ingest-a')).toEqual({
      account: '123456789012',
      name: 'ingest-a',
    });
    expect(queueOfArn('arn:aws-cn:sqs:cn-north-1:123456789012:q.fifo')).toEqual({
      account: '123456789012',
      name: 'q.fifo',
    });
    for (const bad of [
      '',
      'arn:aws:sns:eu-west-1:123456789012:t',
      'arn:aws:sqs:eu-west-1:1234:q',
      'x arn:aws:sqs:e:123456789012:q',
    ])
      expect(queueOfArn(bad), bad).toBeUndefined();
  });

  it('matches a URL to an ARN by account and name, whatever the host', () => {
    expect(isQueue(queueArn('in'), queueUrl('in'))).toBe(true);
    expect(isQueue(queueArn('in'), 'http://127.0.0.1:4566/000000000000/in')).toBe(true);
    expect(isQueue(queueArn('in'), queueUrl('in-2'))).toBe(false);
    expect(isQueue(queueArn('in'), 'https://sqs.us-east-1.amazonaws.com/111111111111/in')).toBe(false);
    expect(isQueue(queueArn('in'), 'not a url')).toBe(false);
    expect(isQueue('not-an-arn', queueUrl('in'))).toBe(false);
  });

  it('looks a URL up once per ARN; unknown queues and bad ARNs are undefined, other errors thrown', async () => {
    const sqs = new FakeSqs(new FakeClock());
    sqs.queues.set(queueUrl('in'), []);
    const urls = new QueueUrls(sqs as unknown as SQSClient);
    expect(await urls.urlOf(queueArn('in'))).toBe(queueUrl('in'));
    expect(await urls.urlOf(queueArn('in'))).toBe(queueUrl('in'));
    expect(await urls.urlOf(queueArn('gone'))).toBeUndefined();
    expect(await urls.urlOf('nope')).toBeUndefined();
    expect(sqs.callsOf('GetQueueUrlCommand')).toHaveLength(2);
    sqs.send = async () => {
      throw Object.assign(new Error('denied'), { name: 'AccessDenied' });
    };
    await expect(urls.urlOf(queueArn('other'))).rejects.toMatchObject({ name: 'AccessDenied' });
  });
});
