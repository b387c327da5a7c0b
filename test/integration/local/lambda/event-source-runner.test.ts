import type { SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  EventSourceRunner,
  type EventSourceRunnerOptions,
  type InvocationResult,
} from '../../../../lib/local/lambda/event-source-runner.js';
import { createQueues, drain, sendBodies, sqsClient } from '../../../support/queues.js';

let client: SQSClient;
const runners: EventSourceRunner[] = [];

beforeAll(() => {
  client = sqsClient();
});
afterEach(async () => {
  await Promise.all(runners.splice(0).map((r) => r.stop()));
});
afterAll(() => client.destroy());

function runner(options: Omit<EventSourceRunnerOptions, 'client'>): EventSourceRunner {
  const r = new EventSourceRunner({
    client,
    waitTimeSeconds: 1,
    visibilityTimeoutSeconds: 1,
    functionTimeoutMs: 1_000,
    ...options,
  });
  runners.push(r);
  return r;
}

function bodies(n: number, prefix = 'm'): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
}

function nextInvocation(
  r: EventSourceRunner,
  match: (i: InvocationResult) => boolean,
): Promise<InvocationResult> {
  return new Promise((resolve) => {
    const listener = (i: InvocationResult) => {
      if (!match(i)) return;
      r.off('invocation', listener);
      resolve(i);
    };
    r.on('invocation', listener);
  });
}

describe('EventSourceRunner against fauxqs', () => {
  it('delivers SQS-shaped records and a Lambda-shaped context', async () => {
    const { queueUrl } = await createQueues(client);
    const ids = await sendBodies(client, queueUrl, ['{"a":1}', '{"a":2}'], {
      MessageAttributes: {
        trace: { DataType: 'String', StringValue: 'abc' },
        blob: { DataType: 'Binary', BinaryValue: new Uint8Array([1, 2, 3]) },
      },
    });
    const events: SQSEvent[] = [];
    const contexts: Context[] = [];
    const sentAt = Date.now();
    const r = runner({
      queueUrl,
      functionName: 'ingest-test',
      memoryLimitInMB: 512,
      batchSize: 10,
      maxConcurrency: 1,
      handler: (event, context) => {
        events.push(event);
        contexts.push(context);
      },
    });
    await r.start();
    await r.waitForIdle();
    const records = events.flatMap((e) => e.Records);
    expect(records.map((rec) => rec.messageId).sort()).toEqual([...ids].sort());
    const record = records.find((rec) => rec.messageId === ids[0])!;
    expect(record.body).toBe('{"a":1}');
    expect(record.eventSource).toBe('aws:sqs');
    expect(record.awsRegion).toBe('us-east-1');
    expect(record.eventSourceARN).toMatch(/^arn:aws:sqs:[^:]+:\d+:runner-[0-9a-f]{8}$/);
    expect(record.receiptHandle).not.toBe('');
    expect(record.md5OfBody).toMatch(/^[0-9a-f]{32}$/);
    expect(record.attributes.ApproximateReceiveCount).toBe('1');
    expect(Math.abs(Number(record.attributes.SentTimestamp) - sentAt)).toBeLessThan(10_000);
    expect(record.messageAttributes.trace).toMatchObject({ stringValue: 'abc', dataType: 'String' });
    expect(record.messageAttributes.blob).toMatchObject({ binaryValue: 'AQID', dataType: 'Binary' });
    const context = contexts[0]!;
    expect(context.functionName).toBe('ingest-test');
    expect(context.memoryLimitInMB).toBe('512');
    expect(context.awsRequestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(context.invokedFunctionArn).toBe('arn:aws:lambda:us-east-1:000000000000:function:ingest-test');
    expect(r.stats).toMatchObject({ received: 2, deleted: 2, failedItems: 0, errors: 0, inFlight: 0 });
  });

  it('caps each invocation at batchSize and gathers several receives inside the batching window', async () => {
    const { queueUrl } = await createQueues(client);
    await sendBodies(client, queueUrl, bodies(12));
    const small: number[] = [];
    const r1 = runner({
      queueUrl,
      batchSize: 4,
      maxConcurrency: 1,
      handler: (e) => void small.push(e.Records.length),
    });
    await r1.start();
    await r1.waitForIdle();
    expect(small.reduce((a, b) => a + b, 0)).toBe(12);
    expect(Math.max(...small)).toBeLessThanOrEqual(4);

    // 25 > 10 per ReceiveMessage: only the window lets one invocation see them all.
    const second = await createQueues(client);
    await sendBodies(client, second.queueUrl, bodies(25));
    const large: number[] = [];
    const r2 = runner({
      queueUrl: second.queueUrl,
      batchSize: 25,
      maximumBatchingWindowMs: 2_000,
      maxConcurrency: 1,
      handler: (e) => void large.push(e.Records.length),
    });
    await r2.start();
    await r2.waitForIdle();
    expect(large).toEqual([25]);
  });

  it('invokes with a partial batch when the batching window closes', async () => {
    const { queueUrl } = await createQueues(client);
    await sendBodies(client, queueUrl, bodies(3));
    const windowMs = 400;
    let invokedAfter = -1;
    const started = Date.now();
    const r = runner({
      queueUrl,
      batchSize: 100,
      maximumBatchingWindowMs: windowMs,
      maxConcurrency: 1,
      handler: (e) => {
        invokedAfter = Date.now() - started;
        expect(e.Records).toHaveLength(3);
      },
    });
    await r.start();
    const stats = await r.until((s) => s.invocations === 1);
    expect(stats.errors).toBe(0);
    expect(invokedAfter).toBeGreaterThanOrEqual(windowMs);
  });

  it('never runs more than maxConcurrency invocations at once', async () => {
    const { queueUrl } = await createQueues(client);
    await sendBodies(client, queueUrl, bodies(30));
    let running = 0;
    let peak = 0;
    const r = runner({
      queueUrl,
      batchSize: 1,
      maxConcurrency: 3,
      handler: async () => {
        running++;
        peak = Math.max(peak, running);
        // Stay busy across a few event-loop turns so the other pollers overlap with this one.
        await new Promise((resolve) => setTimeout(resolve, 15));
        running--;
      },
    });
    await r.start();
    await r.waitForIdle();
    expect(r.stats.deleted).toBe(30);
    expect(peak).toBeLessThanOrEqual(3);
    expect(peak).toBeGreaterThanOrEqual(2);
  });

  it('deletes only successes; batchItemFailures are redelivered and then redriven to the DLQ', async () => {
    const maxReceiveCount = 2;
    const { queueUrl, dlqUrl } = await createQueues(client, maxReceiveCount);
    const ids = await sendBodies(client, queueUrl, ['ok-1', 'bad', 'ok-2', 'ok-3']);
    const badId = ids[1]!;
    const seen = new Map<string, string[]>();
    const r = runner({
      queueUrl,
      batchSize: 10,
      maxConcurrency: 1,
      handler: (event): SQSBatchResponse => {
        for (const rec of event.Records) {
          seen.set(rec.messageId, [
            ...(seen.get(rec.messageId) ?? []),
            rec.attributes.ApproximateReceiveCount,
          ]);
        }
        return {
          batchItemFailures: event.Records.filter((rec) => rec.body === 'bad').map((rec) => ({
            itemIdentifier: rec.messageId,
          })),
        };
      },
    });
    await r.start();
    await r.waitForIdle();
    expect(seen.get(badId)).toEqual(['1', '2']);
    for (const id of ids.filter((id) => id !== badId)) expect(seen.get(id)).toEqual(['1']);
    expect(r.stats.deleted).toBe(3);
    expect(r.stats.failedItems).toBe(maxReceiveCount);
    expect(r.stats.redelivered).toBe(maxReceiveCount - 1);
    const dead = await drain(client, dlqUrl);
    expect(dead.map((m) => m.MessageId)).toEqual([badId]);
    expect(dead[0]!.Body).toBe('bad');
  });

  it('fails the whole batch when the handler throws or names an unknown itemIdentifier', async () => {
    const { queueUrl } = await createQueues(client, 5);
    const ids = await sendBodies(client, queueUrl, bodies(4));
    const counts = new Map<string, string[]>();
    let calls = 0;
    const r = runner({
      queueUrl,
      batchSize: 10,
      maximumBatchingWindowMs: 200,
      maxConcurrency: 1,
      handler: (event) => {
        calls++;
        for (const rec of event.Records) {
          counts.set(rec.messageId, [
            ...(counts.get(rec.messageId) ?? []),
            rec.attributes.ApproximateReceiveCount,
          ]);
        }
        if (calls === 1) throw new Error('boom');
        if (calls === 2) return { batchItemFailures: [{ itemIdentifier: 'not-in-this-batch' }] };
        return { batchItemFailures: [] };
      },
    });
    const failures: InvocationResult[] = [];
    r.on('invocation', (i) => {
      if (i.outcome === 'failed') failures.push(i);
    });
    await r.start();
    await r.waitForIdle();
    expect(failures.map((f) => f.failure)).toEqual(['error', 'invalid-response']);
    expect((failures[0]!.error as Error).message).toBe('boom');
    for (const id of ids) expect(counts.get(id)).toEqual(['1', '2', '3']);
    expect(r.stats).toMatchObject({ deleted: 4, errors: 2, failedItems: 8 });
  });

  it('gives the handler a real deadline and fails an invocation that outlives functionTimeoutMs', async () => {
    const { queueUrl } = await createQueues(client);
    const [id] = await sendBodies(client, queueUrl, ['slow']);
    const functionTimeoutMs = 300;
    const remaining: number[] = [];
    let attempts = 0;
    let timedOut!: Promise<InvocationResult>;
    const r = runner({
      queueUrl,
      functionTimeoutMs,
      maxConcurrency: 1,
      handler: async (_event, context) => {
        attempts++;
        remaining.push(context.getRemainingTimeInMillis());
        await new Promise((resolve) => setTimeout(resolve, 5));
        remaining.push(context.getRemainingTimeInMillis());
        // The first attempt overruns: it only returns once the runner has declared it timed out.
        if (attempts === 1) await timedOut;
      },
    });
    timedOut = nextInvocation(r, (i) => i.failure === 'timeout');
    await r.start();
    const failure = await timedOut;
    expect(failure).toMatchObject({ failure: 'timeout', failedMessageIds: [id], deleted: 0 });
    expect(failure.durationMs).toBeGreaterThanOrEqual(functionTimeoutMs - 5);
    await r.waitForIdle();
    expect(attempts).toBe(2);
    expect(r.stats).toMatchObject({ deleted: 1, errors: 1 });
    expect(remaining[0]).toBeLessThanOrEqual(functionTimeoutMs);
    expect(remaining[0]).toBeGreaterThan(0);
    expect(remaining[1]).toBeLessThan(remaining[0]!);
  });

  it('stops gracefully: in-flight invocations finish and nothing is lost', async () => {
    const { queueUrl } = await createQueues(client, 10);
    const ids = await sendBodies(client, queueUrl, bodies(30));
    const handled = new Set<string>();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered!: () => void;
    const firstEntered = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const r = runner({
      queueUrl,
      batchSize: 5,
      maxConcurrency: 2,
      handler: async (event) => {
        entered();
        await gate;
        for (const rec of event.Records) handled.add(rec.messageId);
      },
    });
    await r.start();
    await firstEntered;
    let stopped = false;
    const stopping = r.stop().then((s) => {
      stopped = true;
      return s;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(stopped).toBe(false);
    release();
    const stats = await stopping;
    expect(stats.inFlight).toBe(0);
    expect(stats.deleted).toBe(handled.size);
    expect(handled.size).toBeGreaterThan(0);

    // Whatever was not deleted (including anything an abandoned long poll took) comes back.
    const rest = new Set<string>();
    const after = runner({
      queueUrl,
      batchSize: 10,
      handler: (e) => void e.Records.map((x) => rest.add(x.messageId)),
    });
    await after.start();
    await after.waitForIdle();
    expect([...handled].filter((id) => rest.has(id))).toEqual([]);
    expect(new Set([...handled, ...rest])).toEqual(new Set(ids));
  });
});
