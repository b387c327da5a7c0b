import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  type MessageAttributeValue,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../../../lib/cli/main.js';
import { localClientConfig } from '../../support/local-aws.js';
import { testTempDir } from '../../support/temp-dir.js';
import { captureIo } from './capture-io.js';

const sqs = new SQSClient(localClientConfig('sqs'));
afterAll(() => {
  sqs.destroy();
});

interface RunOptions {
  /** Pretend stdin and stderr are a terminal, and type this answer. */
  readonly terminalAnswer?: string;
}

async function run(argv: string[], options: RunOptions = {}) {
  const terminal = options.terminalAnswer !== undefined;
  const io = captureIo(
    {},
    Object.assign(terminal ? [`${options.terminalAnswer}\n`] : [], { isTTY: terminal }),
  );
  io.value.stderr.isTTY = terminal;
  const code = await main(['dlq', ...argv], io.value);
  return { code, stdout: io.stdout(), stderr: io.stderr() };
}

async function newQueue(prefix: string, attributes: Record<string, string> = {}): Promise<string> {
  const res = await sqs.send(
    new CreateQueueCommand({ QueueName: `${prefix}-${randomUUID().slice(0, 8)}`, Attributes: attributes }),
  );
  return res.QueueUrl!;
}

async function arnOf(queueUrl: string): Promise<string> {
  const res = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
  );
  return res.Attributes!.QueueArn!;
}

/** A dead-letter queue and the ingest queue it serves (SQS moves a message there after one receive). */
interface Pair {
  readonly dlq: string;
  readonly ingest: string;
  readonly ingestArn: string;
}

async function newPair(): Promise<Pair> {
  const dlq = await newQueue('dlq');
  const ingest = await newQueue('ingest', {
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: await arnOf(dlq), maxReceiveCount: 1 }),
  });
  return { dlq, ingest, ingestArn: await arnOf(ingest) };
}

/** Receives without deleting until the redrive policy moved everything in `queueUrl` to its DLQ. */
async function exhaust(queueUrl: string): Promise<void> {
  for (let round = 0; round < 10; round++) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 0 }),
    );
    if (Messages.length === 0) return;
  }
}

async function visible(queueUrl: string): Promise<number> {
  const res = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
  );
  return Number(res.Attributes?.ApproximateNumberOfMessages);
}

/** Receives everything visible now (bodies and attributes), leaving it hidden for a minute. */
async function drain(queueUrl: string) {
  const all: { body: string; attributes: Record<string, MessageAttributeValue> }[] = [];
  for (;;) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        VisibilityTimeout: 60,
        WaitTimeSeconds: 0,
        MessageAttributeNames: ['All'],
      }),
    );
    if (Messages.length === 0) return all;
    all.push(...Messages.map((m) => ({ body: m.Body ?? '', attributes: m.MessageAttributes ?? {} })));
  }
}

const text = (value: string): MessageAttributeValue => ({ DataType: 'String', StringValue: value });

/**
 * A letter as the handler writes it (lib/ingest/handler/settle/dead-letter-queue.ts: reason, errorName, detail,
 * sourceMessageId, tenant, the source queue and origin send time; originalBodyBytes when it cut the body),
 * or, without `reason`, a message SQS moved after maxReceiveCount (the producer's own attributes only).
 */
async function letter(
  pair: Pair,
  body: string,
  handler?: { reason: string; tenant?: string; truncatedFrom?: number },
  own: Record<string, MessageAttributeValue> = {},
): Promise<void> {
  if (handler === undefined) {
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: pair.ingest,
        MessageBody: body,
        ...(Object.keys(own).length > 0 ? { MessageAttributes: own } : {}),
      }),
    );
    await exhaust(pair.ingest);
    return;
  }
  const attributes: Record<string, MessageAttributeValue> = {
    reason: text(handler.reason),
    errorName: text(handler.reason === 'record-not-found' ? 'RecordNotFoundError' : 'InvalidMessageError'),
    detail: text(`detail of ${handler.reason}`),
    sourceMessageId: text(randomUUID()),
    sourceQueueArn: text(pair.ingestArn),
    's3-ingest-origin-sent': { DataType: 'Number', StringValue: String(Date.now() - 1000) },
    ...(handler.tenant === undefined ? {} : { tenant: text(handler.tenant) }),
    ...(handler.truncatedFrom === undefined
      ? {}
      : { originalBodyBytes: { DataType: 'Number', StringValue: String(handler.truncatedFrom) } }),
  };
  await sqs.send(
    new SendMessageCommand({ QueueUrl: pair.dlq, MessageBody: body, MessageAttributes: attributes }),
  );
}

const write = (id: string) =>
  JSON.stringify({ tenant: 'acme', resource: 'orders', op: 'upsert', id, data: { total: 1 } });

/** One of each kind: failed after retries (x2), record-not-found, invalid-json, schema-violation, truncated. */
async function mixedPair(): Promise<Pair> {
  const url = await newPair();
  await letter(url, write('retried-1'), undefined, { trace: text('t-1') });
  await letter(url, write('retried-2'));
  await letter(
    url,
    JSON.stringify({ tenant: 'acme', resource: 'orders', op: 'update', id: 'gone', data: {} }),
    {
      reason: 'record-not-found',
      tenant: 'acme',
    },
  );
  await letter(url, '{"tenant":"globex", oops', { reason: 'invalid-json' });
  await letter(url, write('bad-schema'), { reason: 'schema-violation', tenant: 'acme' });
  await letter(url, write('cut').slice(0, 20), {
    reason: 'record-not-found',
    tenant: 'acme',
    truncatedFrom: 300_000,
  });
  return url;
}

/** `mixedPair`'s dead-letter queue. */
async function mixedQueue(): Promise<string> {
  return (await mixedPair()).dlq;
}

describe('s3-ingest dlq peek', () => {
  it('shows reason, error, tenant and the first bytes of each body, and deletes nothing', async () => {
    const url = await mixedQueue();
    const r = await run(['peek', '--dlq-url', url]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /reason=invalid-json error=InvalidMessageError .*\n {2}detail: detail of invalid-json\n {2}body: \{"tenant":"globex", oops\n/,
    );
    expect(r.stdout).toMatch(/reason=record-not-found error=RecordNotFoundError tenant=acme /);
    expect(r.stdout).toMatch(
      /reason=none sent=\S+ receives=\d\n {2}body: \{"tenant":"acme","resource":"orders","op":"upsert","id":"retried-/,
    );
    expect(r.stdout).toContain('truncated-from=300000B');
    expect(r.stdout).toMatch(
      /^6 message\(s\): none 2, record-not-found 2, invalid-json 1, schema-violation 1 \(nothing deleted\)$/m,
    );
    // Handed back at once (visibility 0): all six can be received again right now.
    expect(await visible(url)).toBe(6);
    expect(await drain(url)).toHaveLength(6);
  });

  it('filters by reason ("none" = moved by SQS), honours --limit, and prints JSON', async () => {
    const url = await mixedQueue();
    const none = await run(['peek', '--dlq-url', url, '--reason', 'none', '--json']);
    expect(none.code).toBe(0);
    const parsed = JSON.parse(none.stdout) as {
      messages: { reason: string; body: string }[];
      byReason: object;
    };
    expect(parsed.messages.map((m) => m.reason)).toEqual(['none', 'none']);
    expect(parsed.messages.map((m) => JSON.parse(m.body).id).sort()).toEqual(['retried-1', 'retried-2']);
    expect(parsed.byReason).toEqual({ none: 2 });

    const limited = await run(['peek', '--dlq-url', url, '--limit', '3', '--json']);
    expect((JSON.parse(limited.stdout) as { messages: unknown[] }).messages).toHaveLength(3);
    expect(await visible(url)).toBe(6);
  });

  it('refuses a missing queue URL or a bad limit as a usage error', async () => {
    expect((await run(['peek'])).code).toBe(64);
    expect((await run(['peek', '--dlq-url', 'http://x', '--limit', '0'])).code).toBe(64);
    expect((await run(['nope'])).code).toBe(64);
  });
});

describe('s3-ingest dlq redrive', () => {
  it('moves what may succeed now back to its source queue, leaving contract rejections and truncated bodies', async () => {
    const { dlq: from, ingest: to } = await mixedPair();
    const r = await run(['redrive', '--dlq-url', from, '--yes']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^moved 3 message\(s\) to the queue each came from; 2 contract rejection\(s\) left \(--include-rejected moves them\); 1 truncated message\(s\) left \(export them\); 3 left\n$/,
    );
    const arrived = await drain(to);
    expect(arrived.map((m) => (JSON.parse(m.body) as { id: string }).id).sort()).toEqual([
      'gone',
      'retried-1',
      'retried-2',
    ]);
    // The producer's own attributes travel with the origin's; the handler's dead-letter attributes do not.
    expect(arrived.find((m) => m.body.includes('retried-1'))!.attributes).toEqual({
      trace: expect.objectContaining({ StringValue: 't-1' }),
      's3-ingest-origin': expect.objectContaining({ DataType: 'String' }),
      's3-ingest-origin-sent': expect.objectContaining({ DataType: 'Number' }),
    });
    for (const m of arrived) expect(m.attributes.reason).toBeUndefined();
    const left = await drain(from);
    expect(left.map((m) => m.attributes.reason?.StringValue).sort()).toEqual([
      'invalid-json',
      'record-not-found',
      'schema-violation',
    ]);
  });

  it('moves contract rejections only when asked with --include-rejected', async () => {
    const { dlq: from, ingest: to } = await mixedPair();
    const invalidJsonOnly = ['redrive', '--dlq-url', from, '--to', to, '--reason', 'invalid-json', '--yes'];
    const refused = await run(invalidJsonOnly);
    expect(refused.code).toBe(64);
    expect(refused.stderr).toContain('invalid-json is a contract rejection');
    expect(await visible(to)).toBe(0);

    const asked = await run([...invalidJsonOnly, '--include-rejected', '--json']);
    expect(asked.code).toBe(0);
    expect(JSON.parse(asked.stdout)).toEqual({ moved: 1, refused: 0, skipped: {}, left: 5 });
    expect((await drain(to)).map((m) => m.body)).toEqual(['{"tenant":"globex", oops']);
    expect(await visible(from)).toBe(5);
  });

  it('asks before moving: refuses without a terminal or --yes, and moves nothing on "n"', async () => {
    const { dlq: from, ingest: to } = await mixedPair();
    const piped = await run(['redrive', '--dlq-url', from, '--to', to]);
    expect(piped.code).toBe(64);
    expect(piped.stderr).toContain('pass --yes');
    const declined = await run(['redrive', '--dlq-url', from, '--to', to], { terminalAnswer: 'n' });
    expect(declined.code).toBe(1);
    expect(declined.stderr).toMatch(
      /^Move messages from \S+ to \S+, deleting each from the source once sent\? \[y\/N\] /,
    );
    expect(await visible(to)).toBe(0);
    expect(await visible(from)).toBe(6);

    const confirmed = await run(['redrive', '--dlq-url', from, '--to', to, '--reason', 'none'], {
      terminalAnswer: 'y',
    });
    expect(confirmed.code).toBe(0);
    expect(await visible(to)).toBe(2);
    expect(await visible(from)).toBe(4);
  });

  it('leaves a letter whose source queue is unknown, and requires the queue to move from', async () => {
    const from = await newQueue('dlq');
    await sqs.send(new SendMessageCommand({ QueueUrl: from, MessageBody: write('orphan') }));
    const r = await run(['redrive', '--dlq-url', from, '--yes']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      'moved 0 message(s) to the queue each came from; 1 from an unknown source queue left; 1 left\n',
    );
    expect(await visible(from)).toBe(1);
    expect((await run(['redrive', '--yes'])).code).toBe(64);
  });
});

describe('s3-ingest dlq export', () => {
  it('writes every message as NDJSON and keeps them in the queue', async () => {
    const url = await mixedQueue();
    const file = join(testTempDir('dlq-export'), 'out.ndjson');
    const r = await run(['export', '--dlq-url', url, file]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('exported 6 message(s)');
    expect(r.stdout).toContain('still in the queue');
    const lines = readFileSync(file, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toHaveLength(6);
    expect(lines).toContainEqual(
      expect.objectContaining({
        reason: 'invalid-json',
        errorName: 'InvalidMessageError',
        body: '{"tenant":"globex", oops',
        attributes: expect.objectContaining({ reason: { dataType: 'String', stringValue: 'invalid-json' } }),
      }),
    );
    expect(await visible(url)).toBe(6);
  });

  it('purges exactly the exported messages after writing the file, with --purge --yes', async () => {
    const url = await mixedQueue();
    const file = join(testTempDir('dlq-export'), 'rejected.ndjson');
    const r = await run([
      'export',
      '--dlq-url',
      url,
      file,
      '--reason',
      'record-not-found',
      '--purge',
      '--yes',
    ]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('exported 2 message(s)');
    expect(r.stdout).toContain('deleted from the queue');
    expect(readFileSync(file, 'utf8').trimEnd().split('\n')).toHaveLength(2);
    const left = await drain(url);
    expect(left).toHaveLength(4);
    for (const m of left) expect(m.attributes.reason?.StringValue).not.toBe('record-not-found');
  });

  it('does not purge without confirmation, and never overwrites an earlier export', async () => {
    const url = await mixedQueue();
    const dir = testTempDir('dlq-export');
    const piped = await run(['export', '--dlq-url', url, join(dir, 'a.ndjson'), '--purge']);
    expect(piped.code).toBe(64);
    expect(piped.stdout).toContain('still in the queue');
    expect(await visible(url)).toBe(6);

    writeFileSync(join(dir, 'earlier.ndjson'), 'evidence\n');
    const clobber = await run(['export', '--dlq-url', url, join(dir, 'earlier.ndjson')]);
    expect(clobber.code).toBe(1);
    expect(clobber.stderr).toContain('ExportFileExistsError: ');
    expect(clobber.stderr).toContain('earlier.ndjson exists; export to a new file');
    expect(readFileSync(join(dir, 'earlier.ndjson'), 'utf8')).toBe('evidence\n');
    expect(await visible(url)).toBe(6);
  });
});
