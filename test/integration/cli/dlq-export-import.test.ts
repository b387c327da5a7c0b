import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type MessageAttributeValue, ReceiveMessageCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { main } from '../../../lib/cli/main.js';
import { testTempDir } from '../../support/temp-dir.js';
import { captureIo } from './capture-io.js';
import { testSqs } from './sqs-queue.js';

const { sqs, queue } = testSqs();

/** An ingest queue whose messages SQS moves to `dlq` after one receive. */
async function ingestFor(dlqArn: string) {
  return queue('ingest', {
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: 1 }),
  });
}

async function moveToDlq(queueUrl: string, body: string, attributes: Record<string, MessageAttributeValue>) {
  const sent = await sqs.send(
    new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: body, MessageAttributes: attributes }),
  );
  for (let i = 0; i < 3; i++)
    await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, VisibilityTimeout: 0 }));
  return sent.MessageId!;
}

async function run(argv: string[]) {
  const io = captureIo();
  const code = await main(['dlq', ...argv], io.value);
  return { code, stdout: io.stdout(), stderr: io.stderr() };
}

const own: Record<string, MessageAttributeValue> = {
  trace: { DataType: 'String', StringValue: 't-1' },
  count: { DataType: 'Number.int', StringValue: '7' },
  blob: { DataType: 'Binary.gzip', BinaryValue: new Uint8Array([0, 1, 254, 255]) },
};

describe('dlq export and import', () => {
  it('round-trips every attribute and sends the copy back with its origin', async () => {
    const dlq = await queue('dlq');
    const ingest = await ingestFor(dlq.arn);
    const original = await moveToDlq(ingest.url, '{"op":"upsert"}', own);
    const file = join(testTempDir('dlq-roundtrip'), 'out.ndjson');
    const exported = await run(['export', '--dlq-url', dlq.url, file, '--purge', '--yes']);
    expect(exported.code).toBe(0);
    const [line] = readFileSync(file, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(line.attributes).toEqual({
      trace: { dataType: 'String', stringValue: 't-1' },
      count: { dataType: 'Number.int', stringValue: '7' },
      blob: { dataType: 'Binary.gzip', binaryValue: Buffer.from([0, 1, 254, 255]).toString('base64') },
    });
    expect(line.origin).toEqual({ id: original, sentAt: expect.any(Number), sourceArn: ingest.arn });
    expect(line.systemAttributes.DeadLetterQueueSourceArn).toBe(ingest.arn);

    const imported = await run(['import', file, '--to', ingest.url, '--json']);
    expect(imported.code).toBe(0);
    expect(JSON.parse(imported.stdout)).toEqual({ moved: 1, refused: 0, skipped: {}, left: 0 });
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: ingest.url,
        MessageAttributeNames: ['All'],
        VisibilityTimeout: 30,
      }),
    );
    expect(Messages).toHaveLength(1);
    expect(Messages[0]?.Body).toBe('{"op":"upsert"}');
    const attributes = Messages[0]?.MessageAttributes ?? {};
    expect(attributes.trace).toMatchObject({ DataType: 'String', StringValue: 't-1' });
    expect(attributes.count).toMatchObject({ DataType: 'Number.int', StringValue: '7' });
    expect(Buffer.from(attributes.blob?.BinaryValue ?? [])).toEqual(Buffer.from([0, 1, 254, 255]));
    expect(attributes.blob?.DataType).toBe('Binary.gzip');
    expect(attributes['s3-ingest-origin']?.StringValue).toBe(original);
    expect(attributes['s3-ingest-origin-sent']?.StringValue).toBe(String(line.origin.sentAt));
  });

  it('sends only the lines that came from --to, and refuses a file that is not an export', async () => {
    const dlq = await queue('dlq');
    const alpha = await ingestFor(dlq.arn);
    const beta = await ingestFor(dlq.arn);
    await moveToDlq(alpha.url, 'a', {});
    await moveToDlq(beta.url, 'b', {});
    const dir = testTempDir('dlq-import');
    const file = join(dir, 'both.ndjson');
    expect((await run(['export', '--dlq-url', dlq.url, file])).code).toBe(0);
    const r = await run(['import', file, '--to', beta.url]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`sent 1 message(s) to ${beta.url}; 1 from another queue than --to left; 1 left\n`);

    const broken = join(dir, 'broken.ndjson');
    writeFileSync(broken, `${readFileSync(file, 'utf8')}{"messageId":"x"}\n`);
    const refused = await run(['import', broken, '--to', alpha.url]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`ImportFileError: ${broken}:3: not an export line`);
    const { Messages = [] } = await sqs.send(new ReceiveMessageCommand({ QueueUrl: alpha.url }));
    expect(Messages).toHaveLength(0);
  });
});
