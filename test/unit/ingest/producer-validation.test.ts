import { SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import {
  encodeWrite,
  InvalidBatchError,
  InvalidMessageError,
  Producer,
  type ProducerWrite,
  validateWrite,
} from '../../../lib/ingest/index.js';
import { loadBadMessages } from '../../fixtures/messages.js';

const bad = loadBadMessages();

/** A real client whose every command is counted and then refused locally: nothing may reach the network. */
function countingClient() {
  const client = new SQSClient({
    region: 'us-east-1',
    endpoint: 'http://127.0.0.1:9',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  const calls: string[] = [];
  client.middlewareStack.add(
    (_next, context) => async () => {
      calls.push(context.commandName ?? '?');
      throw new Error('no call may be sent in this test');
    },
    { step: 'initialize' },
  );
  return { client, calls };
}

/**
 * The write a producer user would have built to send the corpus body: the parsed body without `v` (the
 * producer adds `v: 1`; a different `v` is kept so it still fails). Bodies that are not JSON, or lack `v`,
 * cannot be expressed as a write.
 */
function asWrite(body: string): { write: ProducerWrite } | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return { write: parsed as ProducerWrite };
  }
  const record = parsed as Record<string, unknown>;
  if (!Object.hasOwn(record, 'v')) return undefined;
  if (record.v === 1) delete record.v;
  return { write: record as unknown as ProducerWrite };
}

const expressible = bad.messages.flatMap((m) => {
  const converted = asWrite(m.body);
  return converted === undefined ? [] : [{ ...m, write: converted.write }];
});

describe('Producer refuses the hostile corpus before sending', () => {
  it('covers most of the corpus', () => {
    expect(expressible.length).toBeGreaterThanOrEqual(100);
  });

  it.each(expressible.map((m) => [m.name, m] as const))('%s', async (_name, message) => {
    const { client, calls } = countingClient();
    const producer = new Producer({ queueUrl: 'http://127.0.0.1:9/q', client, resources: bad.resources });
    const single = await producer.send(message.write).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(single).toBeInstanceOf(InvalidMessageError);
    expect((single as InvalidMessageError).reason).toBe(message.reason);
    expect(calls).toEqual([]);
  });
});

describe('Producer.sendMany validation', () => {
  it('rejects the whole call with every invalid index and reason, sending nothing', async () => {
    const { client, calls } = countingClient();
    const producer = new Producer({ queueUrl: 'http://127.0.0.1:9/q', client });
    const ok: ProducerWrite = { tenant: 'acme', resource: 'orders', op: 'insert', data: { n: 1 } };
    const writes: ProducerWrite[] = [
      ok,
      { ...ok, tenant: '../other' },
      ok,
      { tenant: 'acme', resource: 'orders', op: 'delete', id: 'a..b' },
      { ...ok, priority: 101 },
    ];
    const err = await producer.sendMany(writes).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidBatchError);
    expect((err as InvalidBatchError).name).toBe('InvalidBatchError');
    expect((err as InvalidBatchError).issues.map(({ index, reason }) => ({ index, reason }))).toEqual([
      { index: 1, reason: 'invalid-tenant' },
      { index: 3, reason: 'invalid-id' },
      { index: 4, reason: 'invalid-priority' },
    ]);
    expect(calls).toEqual([]);
  });

  it('refuses an unusable FIFO message group before sending', async () => {
    const { client, calls } = countingClient();
    const producer = new Producer({
      queueUrl: 'http://127.0.0.1:9/q.fifo',
      client,
      messageGroupId: () => '',
    });
    const err = await producer
      .sendMany([{ tenant: 'acme', resource: 'orders', op: 'delete', id: 'o-1' }])
      .catch((e: unknown) => e);
    expect((err as InvalidBatchError).issues[0]?.reason).toBe('invalid-message-group');
    expect(calls).toEqual([]);
  });

  it('refuses a body the queue cannot take', async () => {
    const { client, calls } = countingClient();
    const producer = new Producer({ queueUrl: 'http://127.0.0.1:9/q', client, maxMessageBytes: 1024 });
    const err = await producer
      .send({ tenant: 'acme', resource: 'orders', op: 'insert', data: { s: 'x'.repeat(2000) } })
      .catch((e: unknown) => e);
    expect((err as InvalidMessageError).reason).toBe('too-large');
    expect(calls).toEqual([]);
  });

  it('resolves to an empty result for no writes', async () => {
    const { client, calls } = countingClient();
    await expect(new Producer({ queueUrl: 'http://127.0.0.1:9/q', client }).sendMany([])).resolves.toEqual(
      [],
    );
    expect(calls).toEqual([]);
  });
});

/** The characters SQS accepts in a body: #x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF. */
function isSqsBodyChar(code: number): boolean {
  return (
    code === 0x9 ||
    code === 0xa ||
    code === 0xd ||
    (code >= 0x20 && code <= 0xd7ff) ||
    (code >= 0xe000 && code <= 0xfffd) ||
    (code >= 0x10000 && code <= 0x10ffff)
  );
}

describe('encodeWrite', () => {
  const base = { tenant: 'acme', resource: 'orders', op: 'upsert', id: 'o-1' } as const;

  it('refuses values JSON cannot carry instead of changing them', () => {
    const reason = (data: Record<string, unknown>) => {
      try {
        encodeWrite({ ...base, data });
      } catch (err) {
        return (err as InvalidMessageError).reason;
      }
      return 'accepted';
    };
    expect(reason({ n: Number.NaN })).toBe('schema');
    expect(reason({ deep: { n: Number.POSITIVE_INFINITY } })).toBe('schema');
    expect(reason({ n: 10n })).toBe('schema');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(reason({ cyclic })).toBe('schema');
    expect(
      reason({
        bad: {
          toJSON() {
            throw 'not an Error';
          },
        },
      }),
    ).toBe('schema');
  });

  it('refuses unknown fields and own __proto__ properties of the write', () => {
    expect(() => validateWrite({ ...base, data: {}, extra: true } as unknown as ProducerWrite)).toThrow(
      expect.objectContaining({ reason: 'schema' }),
    );
    const sneaky = { ...base, data: {} } as Record<string, unknown>;
    Object.defineProperty(sneaky, '__proto__', { value: { admin: true }, enumerable: true });
    expect(() => validateWrite(sneaky as unknown as ProducerWrite)).toThrow(
      expect.objectContaining({ reason: 'forbidden-key' }),
    );
  });

  it('escapes the characters SQS refuses, so the body round-trips', () => {
    const data = { s: 'a\ufffeb\uffffc', lone: '\ud800', nul: '\u0000' };
    const { body, bytes } = encodeWrite({ ...base, data });
    expect([...body].filter((c) => !isSqsBodyChar(c.codePointAt(0)!))).toEqual([]);
    expect((JSON.parse(body) as { data: unknown }).data).toEqual(data);
    expect(bytes).toBe(Buffer.byteLength(body));
  });

  it('serializes like JSON for dates and drops undefined fields', () => {
    const at = new Date('2024-05-01T00:00:00Z');
    const { parsed } = encodeWrite({ ...base, data: { at, gone: undefined }, key: undefined });
    expect(parsed.data).toEqual({ at: '2024-05-01T00:00:00.000Z' });
  });
});
