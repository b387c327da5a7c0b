import { randomUUID } from 'node:crypto';
import { CreateQueueCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../../lib/cli/io.js';
import { sendCommand } from '../../../lib/cli/send.js';
import { localClientConfig } from '../../support/local-aws.js';
import { captureIo } from './capture-io.js';

// Issue 14, defect 8: `send -` decoded each stdin chunk alone, so a character split across two chunks
// became U+FFFD, was sent, and the CLI exited 0.

const sqs = new SQSClient(localClientConfig('sqs'));
afterAll(() => sqs.destroy());

/** process.stdin's chunk size for a pipe: where real input gets cut. */
const CHUNK_BYTES = 64 * 1024;

async function newQueue(): Promise<string> {
  const res = await sqs.send(new CreateQueueCommand({ QueueName: `cli-utf8-${randomUUID().slice(0, 8)}` }));
  return res.QueueUrl!;
}

/** Runs `send --queue-url URL -` with stdin delivered as exactly these chunks. */
async function send(queueUrl: string, chunks: readonly Buffer[]) {
  const io = captureIo(
    {},
    (async function* () {
      yield* chunks;
    })(),
  );
  const code = await sendCommand(['--queue-url', queueUrl, '-'], io.value);
  return { code, stdout: io.stdout(), stderr: io.stderr() };
}

async function receiveAll(queueUrl: string): Promise<string[]> {
  const res = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
  );
  return (res.Messages ?? []).map((m) => m.Body ?? '');
}

/** One NDJSON write whose `text` puts `char` so that its first byte is the last byte of chunk 1. */
function lineSplitting(char: string): { input: Buffer; text: string } {
  const head = JSON.stringify({
    tenant: 'acme',
    resource: 'orders',
    op: 'upsert',
    id: 'o-1',
    data: { text: '' },
  });
  const before = head.length - 3; // bytes up to the opening quote of the empty `text` value (ASCII only)
  const filler = 'x'.repeat(CHUNK_BYTES - 1 - before);
  const text = `${filler}${char}tail`;
  const line = JSON.stringify({
    tenant: 'acme',
    resource: 'orders',
    op: 'upsert',
    id: 'o-1',
    data: { text },
  });
  const input = Buffer.from(`${line}\n`, 'utf8');
  expect(input.subarray(CHUNK_BYTES - 1, CHUNK_BYTES - 1 + Buffer.byteLength(char)).toString()).toBe(char);
  return { input, text };
}

describe('s3-ingest send - decodes stdin as one UTF-8 stream', () => {
  // No 4-byte character here: fauxqs 2.4.1 refuses characters above U+FFFF in bodies (SQS accepts them).
  it.each([
    ['a 2-byte character (ë)', 'ë'],
    ['a 3-byte character (€)', '€'],
  ])('keeps %s split across a 64 KiB chunk boundary', async (_, char) => {
    const queueUrl = await newQueue();
    const { input, text } = lineSplitting(char);
    const result = await send(queueUrl, [input.subarray(0, CHUNK_BYTES), input.subarray(CHUNK_BYTES)]);
    expect(result.code, result.stderr).toBe(EXIT.ok);
    const bodies = await receiveAll(queueUrl);
    expect(bodies).toHaveLength(1);
    expect(JSON.parse(bodies[0]!).data.text).toBe(text);
  });

  it('refuses input that is not UTF-8 (exit 2, nothing sent) instead of sending U+FFFD', async () => {
    const queueUrl = await newQueue();
    const good = Buffer.from(
      `${JSON.stringify({ tenant: 'acme', resource: 'orders', op: 'upsert', id: 'o-1', data: { a: 'é' } })}\n`,
    );
    const latin1 = Buffer.from(
      `${JSON.stringify({ tenant: 'acme', resource: 'orders', op: 'upsert', id: 'o-2', data: { a: 'é' } })}\n`,
      'latin1',
    );
    const result = await send(queueUrl, [good, latin1]);
    expect(result.code).toBe(EXIT.badInput);
    expect(result.stderr).toMatch(/not valid UTF-8/);
    expect(await receiveAll(queueUrl)).toEqual([]);
  });

  it('refuses input that ends inside a character', async () => {
    const queueUrl = await newQueue();
    const line = Buffer.from(
      `${JSON.stringify({ tenant: 'acme', resource: 'orders', op: 'upsert', id: 'o-1', data: { a: 1 } })}\n€`,
    );
    const result = await send(queueUrl, [line.subarray(0, line.length - 1)]);
    expect(result.code).toBe(EXIT.badInput);
    expect(await receiveAll(queueUrl)).toEqual([]);
  });
});
