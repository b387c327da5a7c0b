// Redelivery with backoff: failed records get a visibility timeout from their receive count, bounded by the
// invocation's settle budget; a failing or stalled visibility change changes no outcome.
import type { SQSClient } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import type { IngestHandler } from '../../../../../lib/ingest/handler/ingest-handler.js';
import {
  queueUrlOf,
  SqsVisibility,
  type VisibilityChange,
  type VisibilityPort,
  visibilityTimeoutFor,
} from '../../../../../lib/ingest/handler/settle/redelivery-backoff.js';
import {
  body,
  failedIds,
  lambdaContext,
  memoryBudgets,
  prefixOf,
  sqsEvent,
  sqsRecord,
  TrackingStore,
  testHandler,
} from '../support.js';

const handlers: IngestHandler[] = [];

afterEach(async () => {
  await Promise.all(handlers.splice(0).map((h) => h.close()));
});

const slowDown = () =>
  Object.assign(new Error('Please reduce your request rate.'), {
    name: 'SlowDown',
    $fault: 'server',
    $metadata: { httpStatusCode: 503 },
  });

/** A port that records what it was asked, answering with `answer`. */
class RecordingPort implements VisibilityPort {
  readonly calls: VisibilityChange[][] = [];
  constructor(
    private readonly answer: (changes: readonly VisibilityChange[]) => Promise<ReadonlySet<string>>,
  ) {}
  change(changes: readonly VisibilityChange[]) {
    this.calls.push([...changes]);
    return this.answer(changes);
  }
}

/** A handler whose store throttles every write to tenant `hot` (retries off), with `port` for redeliveries. */
function throttlingHandler(port: VisibilityPort, env: Record<string, string> = {}) {
  const store = new TrackingStore();
  store.hook = (call) => {
    if (call.key.startsWith('t=hot/')) throw slowDown();
  };
  const t = testHandler({ WRITE_RETRIES: '0', ...env }, { store, redeliveries: port });
  handlers.push(t.handler);
  return t;
}

const record = (tenant: string, id: string, receiveCount: number) => {
  const r = sqsRecord(body({ tenant, id }), `m-${id}`);
  r.attributes.ApproximateReceiveCount = String(receiveCount);
  return r;
};

describe('visibilityTimeoutFor', () => {
  it('is min(5 s x 2^(n-1), 300 s) by default, and follows its options', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 20].map((n) => visibilityTimeoutFor(n))).toEqual([
      5, 10, 20, 40, 80, 160, 300, 300,
    ]);
    // A missing or nonsense receive count counts as the first receive.
    expect([0, -3, Number.NaN].map((n) => visibilityTimeoutFor(n))).toEqual([5, 5, 5]);
    expect(visibilityTimeoutFor(3, { baseSeconds: 1, maxSeconds: 3 })).toBe(3);
    expect(visibilityTimeoutFor(1_000, { maxSeconds: 100_000 })).toBe(43_200);
  });

  it('starts at turnSeconds (default 1 s) for a record that only waited for its turn', () => {
    expect([1, 2, 3, 4].map((n) => visibilityTimeoutFor(n, {}, true))).toEqual([1, 2, 4, 8]);
    expect(visibilityTimeoutFor(2, { turnSeconds: 3 }, true)).toBe(6);
    expect(visibilityTimeoutFor(20, { maxSeconds: 30 }, true)).toBe(30);
  });
});

describe('queueUrlOf', () => {
  it('forms the queue URL from the event source ARN, and refuses anything else', () => {
    expect(queueUrlOf('arn:aws:sqs:eu-west-1:123456789012:ingest')).toBe(
      'https://sqs.eu-west-1.amazonaws.com/123456789012/ingest',
    );
    expect(queueUrlOf('arn:aws:sqs:us-east-1:123456789012:orders.fifo')).toBe(
      'https://sqs.us-east-1.amazonaws.com/123456789012/orders.fifo',
    );
    for (const bad of [
      '',
      'arn:aws:sns:us-east-1:123456789012:topic',
      'arn:aws:sqs:us-east-1:1:q',
      'q/../x',
    ]) {
      expect(queueUrlOf(bad)).toBeUndefined();
    }
  });
});

describe('redelivery backoff in the handler', () => {
  it('gives only the failed records a visibility timeout from their receive count', async () => {
    const port = new RecordingPort(async () => new Set());
    const { handler } = throttlingHandler(port);
    const event = sqsEvent([record('hot', 'a', 1), record('hot', 'b', 3), record('cold', 'c', 2)]);
    const response = await handler(event, lambdaContext(30_000));
    expect(failedIds(response)).toEqual(['m-a', 'm-b']);
    expect(port.calls).toHaveLength(1);
    expect(
      port.calls[0]!.map((c) => [c.messageId, c.receiptHandle, c.visibilityTimeoutSeconds, c.queueUrl]),
    ).toEqual([
      ['m-a', 'rh-m-a', 5, 'https://sqs.us-east-1.amazonaws.com/000000000000/ingest'],
      ['m-b', 'rh-m-b', 20, 'https://sqs.us-east-1.amazonaws.com/000000000000/ingest'],
    ]);
  });

  it('a record whose prefix had no slot for it before the cutoff comes back after 1 s, not 5 s', async () => {
    const port = new RecordingPort(async () => new Set());
    const store = new TrackingStore();
    store.hook = (call) => {
      if (call.key.startsWith('t=hot/')) throw slowDown();
    };
    const budgets = memoryBudgets();
    const t = testHandler(
      { WRITE_RETRIES: '0', SEMAPHORE_TABLE: 'unused' },
      { store, redeliveries: port, budgets: budgets.factory },
    );
    handlers.push(t.handler);
    // The `busy` tenant's prefix: its slots are booked by other invocations past the cutoff.
    await budgets.bookAhead(prefixOf('busy'), t.config.s3PrefixWriteRate, 60_000);
    // 10 writes each: both tenants book their prefix's slots.
    const busyRecords = Array.from({ length: 10 }, (_, i) => record('busy', `b${i}`, 2));
    const hotRecords = Array.from({ length: 10 }, (_, i) => record('hot', `h${i}`, 2));
    const response = await t.handler(sqsEvent([...busyRecords, ...hotRecords]), lambdaContext(4_000));
    expect(failedIds(response)).toHaveLength(20);
    const timeouts = new Map(port.calls.flat().map((c) => [c.messageId, c.visibilityTimeoutSeconds]));
    // Second receive: 1 s x 2 for the records that waited for their turn, 5 s x 2 for the ones S3 refused.
    for (const r of busyRecords) expect(timeouts.get(r.messageId)).toBe(2);
    for (const r of hotRecords) expect(timeouts.get(r.messageId)).toBe(10);
  });

  it('a record whose budget is unreachable keeps the normal backoff: DynamoDB down is not a turn', async () => {
    const port = new RecordingPort(async () => new Set());
    const unreachable = memoryBudgets({
      book: () => {
        throw Object.assign(new Error('connect ECONNREFUSED'), { name: 'TimeoutError' });
      },
    });
    const t = testHandler(
      { WRITE_RETRIES: '0', SEMAPHORE_TABLE: 'unused' },
      { redeliveries: port, budgets: unreachable.factory },
    );
    handlers.push(t.handler);
    const records = Array.from({ length: 10 }, (_, i) => record('acme', `a${i}`, 2));
    const response = await t.handler(sqsEvent(records), lambdaContext(4_000));
    expect(failedIds(response)).toHaveLength(10);
    for (const c of port.calls.flat()) expect(c.visibilityTimeoutSeconds).toBe(10);
    expect(port.calls.flat()).toHaveLength(10);
  });

  it('is not called when every record succeeded', async () => {
    const port = new RecordingPort(async () => new Set());
    const { handler } = throttlingHandler(port);
    const response = await handler(sqsEvent([record('cold', 'x', 4)]), lambdaContext(30_000));
    expect(response).toEqual({ batchItemFailures: [] });
    expect(port.calls).toHaveLength(0);
  });

  it('a failing port changes no outcome', async () => {
    const port = new RecordingPort(async () => {
      throw new Error('AccessDenied');
    });
    const { handler } = throttlingHandler(port);
    const event = sqsEvent([record('hot', 'a', 1), record('cold', 'c', 1)]);
    expect(failedIds(await handler(event, lambdaContext(30_000)))).toEqual(['m-a']);
    expect(port.calls).toHaveLength(1);
  });

  it('a port that never answers cannot hold the invocation past its settle budget', async () => {
    const port = new RecordingPort(() => new Promise<never>(() => undefined));
    // 1 s left, margin 600 ms: the cutoff is at 400 ms, the settle budget ends 300 ms later.
    const { handler } = throttlingHandler(port, { DEADLINE_MARGIN_MS: '600', WRITE_TIMEOUT_MS: '300' });
    const started = performance.now();
    const response = await handler(sqsEvent([record('hot', 'a', 1)]), lambdaContext(1_000));
    expect(failedIds(response)).toEqual(['m-a']);
    expect(port.calls).toHaveLength(1);
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});

describe('SqsVisibility', () => {
  it('sends ChangeMessageVisibilityBatch in chunks of 10 per queue, capped at the queue timeout, and reports refused entries', async () => {
    const sent: {
      QueueUrl: string;
      Entries: { Id: string; ReceiptHandle: string; VisibilityTimeout: number }[];
    }[] = [];
    const attributeReads: string[] = [];
    const client = {
      send: async (
        command: { input: (typeof sent)[number] & { AttributeNames?: string[] } },
        options: { abortSignal?: AbortSignal },
      ) => {
        expect(options.abortSignal).toBeInstanceOf(AbortSignal);
        if (command.input.AttributeNames !== undefined) {
          // The queue's own timeout: q1 3 s (caps the 5 s backoff), q2 unreadable (no cap).
          attributeReads.push(command.input.QueueUrl);
          if (command.input.QueueUrl === 'q2') throw new Error('AccessDenied');
          return { Attributes: { VisibilityTimeout: '3' } };
        }
        sent.push(command.input);
        if (command.input.QueueUrl === 'q2') throw new Error('throttled');
        return { Failed: command.input.Entries.length === 10 ? [{ Id: '3' }] : [] };
      },
    } as unknown as SQSClient;
    const changes = [
      ...Array.from({ length: 12 }, (_, i) => ({
        queueUrl: 'q1',
        messageId: `a${i}`,
        receiptHandle: `r${i}`,
        visibilityTimeoutSeconds: 5,
      })),
      { queueUrl: 'q2', messageId: 'b', receiptHandle: 'rb', visibilityTimeoutSeconds: 10 },
    ];
    const port = new SqsVisibility(client);
    const refused = await port.change(changes, { signal: new AbortController().signal });
    expect(sent.map((s) => [s.QueueUrl, s.Entries.length])).toEqual([
      ['q1', 10],
      ['q1', 2],
      ['q2', 1],
    ]);
    expect(sent[1]!.Entries[0]).toEqual({ Id: '0', ReceiptHandle: 'r10', VisibilityTimeout: 3 });
    expect(sent[2]!.Entries[0]).toEqual({ Id: '0', ReceiptHandle: 'rb', VisibilityTimeout: 10 });
    expect([...refused].sort()).toEqual(['a3', 'b']);
    // The queue timeout is read once per queue per container (a failed read is tried again next time).
    await port.change(changes.slice(0, 1), { signal: new AbortController().signal });
    expect(attributeReads).toEqual(['q1', 'q2']);
  });
});
