// Helpers for tests that read a real SQS dead-letter queue (fauxqs, or LocalStack/AWS).
import { createHash, randomUUID } from 'node:crypto';
import { CreateQueueCommand, type Message, type SQSClient } from '@aws-sdk/client-sqs';
import { expect } from 'vitest';
import { DEAD_LETTER_FORMAT } from '../../../lib/ingest/handler/settle/dead-letter-queue.js';
import { drain } from '../../support/queues.js';

export async function createDlq(sqs: SQSClient): Promise<string> {
  const out = await sqs.send(
    new CreateQueueCommand({ QueueName: `handler-dlq-${randomUUID().slice(0, 8)}` }),
  );
  return out.QueueUrl!;
}

export interface DeadLettered {
  readonly body: string;
  readonly attributes: Record<string, string>;
}

/** Every message in the DLQ with its string attributes, keyed by `sourceMessageId`. */
export async function readDlq(sqs: SQSClient, queueUrl: string): Promise<Map<string, DeadLettered>> {
  const out = new Map<string, DeadLettered>();
  for (const m of await drain(sqs, queueUrl)) out.set(sourceId(m), letterOf(m));
  return out;
}

function sourceId(m: Message): string {
  return m.MessageAttributes?.sourceMessageId?.StringValue ?? `(no sourceMessageId: ${m.MessageId})`;
}

function letterOf(m: Message): DeadLettered {
  const attributes: Record<string, string> = {};
  for (const [name, value] of Object.entries(m.MessageAttributes ?? {})) {
    if (value.StringValue !== undefined) attributes[name] = value.StringValue;
  }
  return { body: m.Body ?? '', attributes };
}

/**
 * The DLQ keeps a refused body verbatim; one too large to travel whole keeps its head, plus its full size
 * and SHA-256 as attributes.
 */
export function expectDeadLetteredBody(
  letter: DeadLettered | undefined,
  original: string,
  name: string,
): void {
  expect(letter, name).toBeDefined();
  const bytes = Buffer.byteLength(original);
  if (bytes <= DEAD_LETTER_FORMAT.maxBodyBytes) {
    expect(letter!.body, name).toBe(original === '' ? '(empty body)' : original);
    return;
  }
  expect(original.startsWith(letter!.body.replace(/\uFFFD$/, '')), name).toBe(true);
  expect(Buffer.byteLength(letter!.body), name).toBeLessThanOrEqual(DEAD_LETTER_FORMAT.maxBodyBytes + 3);
  expect(letter!.attributes.originalBodyBytes, name).toBe(String(bytes));
  expect(letter!.attributes.originalBodySha256, name).toBe(
    createHash('sha256').update(original).digest('hex'),
  );
}
