// DeadLetterQueue against a recording SQS client (no emulator): how letters are packed into SendMessageBatch
// calls (10 entries, 250 KiB of what is sent), what SQS's partial answers make of them, and each entry's
// body and attributes. Issue 14's mutation testing found batches over 256 KiB and partially failed entries
// unasserted.
import { createHash } from 'node:crypto';
import type { SendMessageBatchRequestEntry, SendMessageBatchResult } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import {
  DEAD_LETTER_FORMAT,
  type DeadLetter,
  DeadLetterQueue,
  letterSourceOf,
} from '../../../../../lib/ingest/handler/settle/dead-letter-queue.js';
import { DEFERRAL_ATTRIBUTES } from '../../../../../lib/ingest/handler/settle/deferral-port.js';
import { allSent, batchBytes, recordingClient } from '../recording-sqs.js';
import { sqsRecord } from '../support.js';

const QUEUE = 'https://sqs.us-east-1.amazonaws.com/000000000000/dlq';

let sequence = 0;
function letter(overrides: Partial<DeadLetter> = {}): DeadLetter {
  sequence++;
  return {
    messageId: `m-${sequence}`,
    body: '{"v":1,"tenant":"acme"}',
    reason: 'schema',
    errorName: 'InvalidMessageError',
    detail: 'op: required',
    tenant: 'acme',
    ...overrides,
  };
}

const attr = (e: SendMessageBatchRequestEntry, name: string) => e.MessageAttributes?.[name]?.StringValue;

describe('DeadLetterQueue packs letters into batches', () => {
  it('sends at most 10 entries per call, with ids 0..n-1 in each, to its queue', async () => {
    const { client, calls } = recordingClient();
    const letters = Array.from({ length: 23 }, () => letter());
    const failed = await new DeadLetterQueue(client, QUEUE).send(letters);
    expect([...failed]).toEqual([]);
    expect(calls.map((c) => c.entries.length)).toEqual([10, 10, 3]);
    for (const call of calls) {
      expect(call.queueUrl).toBe(QUEUE);
      expect(call.entries.map((e) => e.Id)).toEqual(call.entries.map((_, i) => String(i)));
    }
    expect(calls.flatMap((c) => c.entries.map((e) => attr(e, 'sourceMessageId')))).toEqual(
      letters.map((l) => l.messageId),
    );
  });

  it('starts a new batch before one would exceed 250 KiB of what is sent', async () => {
    const { client, calls } = recordingClient();
    // 100,000-byte bodies: two fit in one batch, a third would pass 256,000 bytes.
    const letters = Array.from({ length: 5 }, () => letter({ body: 'b'.repeat(100_000) }));
    await new DeadLetterQueue(client, QUEUE).send(letters);
    expect(calls.map((c) => c.entries.length)).toEqual([2, 2, 1]);
    for (const call of calls) expect(batchBytes(call.entries)).toBeLessThanOrEqual(250 * 1024);
  });

  it('counts attributes, not only bodies, against the batch size', async () => {
    const { client, calls } = recordingClient();
    // Bodies of 85,000 bytes: three are 255,000 (under 256,000); with their ~3 KB escaped details they are not.
    const letters = Array.from({ length: 3 }, () =>
      letter({ body: 'b'.repeat(85_000), detail: '\ufffe'.repeat(500) }),
    );
    await new DeadLetterQueue(client, QUEUE).send(letters);
    expect(calls.map((c) => c.entries.length)).toEqual([2, 1]);
  });

  it('a letter that does not fit after another starts the next batch, which later letters join', async () => {
    const { client, calls } = recordingClient();
    const letters = [
      letter({ body: 'a'.repeat(20_000) }),
      letter({ body: 'x'.repeat(DEAD_LETTER_FORMAT.maxBodyBytes) }),
      letter(),
    ];
    await new DeadLetterQueue(client, QUEUE).send(letters);
    expect(calls.map((c) => c.entries.length)).toEqual([1, 2]);
  });

  it('a batch of exactly 256,000 bytes as SQS counts them (attribute names and types too) is one call; one byte more is two', async () => {
    /** The bytes SQS counts for `l` sent alone. */
    const sizeOf = async (l: DeadLetter) => {
      const { client, calls } = recordingClient();
      await new DeadLetterQueue(client, QUEUE).send([l]);
      return batchBytes(calls[0]!.entries);
    };
    const first = letter({ messageId: 'first', body: 'f'.repeat(130_000) });
    // The second letter's body fills the batch to the byte: its overhead is its size less its 1-byte body.
    const secondOverhead = (await sizeOf(letter({ messageId: 'second', body: 's' }))) - 1;
    const fill = 250 * 1024 - (await sizeOf(first)) - secondOverhead;
    for (const [extra, calls] of [
      [0, [2]],
      [1, [1, 1]],
    ] as const) {
      const second = letter({ messageId: 'second', body: 's'.repeat(fill + extra) });
      const recorded = recordingClient();
      await new DeadLetterQueue(recorded.client, QUEUE).send([first, second]);
      expect(recorded.calls.map((c) => c.entries.length)).toEqual(calls);
      expect(batchBytes(recorded.calls.flatMap((c) => c.entries))).toBe(250 * 1024 + extra);
    }
  });

  it('a letter larger than a whole batch is sent alone, never after an empty call (SQS refuses an empty batch)', async () => {
    const { client, calls } = recordingClient();
    // The body is capped at 240 KiB, but the other fields are the caller's: an oversized error name.
    const huge = letter({ errorName: 'E'.repeat(260_000) });
    const small = letter();
    await new DeadLetterQueue(client, QUEUE).send([huge, small]);
    expect(calls.map((c) => c.entries.map((e) => attr(e, 'sourceMessageId')))).toEqual([
      [huge.messageId],
      [small.messageId],
    ]);
  });

  it('sends nothing for no letters', async () => {
    const { client, calls } = recordingClient();
    expect([...(await new DeadLetterQueue(client, QUEUE).send([]))]).toEqual([]);
    expect(calls).toEqual([]);
  });
});

describe('DeadLetterQueue reports what SQS did not store', () => {
  it('an entry listed in Failed, or in neither list, is not dead-lettered; the rest are', async () => {
    const { client } = recordingClient(() => ({
      Successful: [{ Id: '0' }, { Id: '3' }] as never,
      Failed: [{ Id: '1', Code: 'InternalError', SenderFault: false }],
    }));
    const letters = Array.from({ length: 4 }, () => letter());
    const failed = await new DeadLetterQueue(client, QUEUE).send(letters);
    expect([...failed].sort()).toEqual([letters[1]!.messageId, letters[2]!.messageId].sort());
  });

  it('an answer with neither list stores nothing', async () => {
    const { client } = recordingClient(() => ({}) as SendMessageBatchResult);
    const letters = [letter(), letter()];
    const failed = await new DeadLetterQueue(client, QUEUE).send(letters);
    expect([...failed].sort()).toEqual(letters.map((l) => l.messageId).sort());
  });

  it('a failed call fails its own batch only', async () => {
    const { client } = recordingClient((entries, call) =>
      call === 1 ? new Error('socket hang up') : allSent(entries, call),
    );
    const letters = Array.from({ length: 12 }, () => letter());
    const failed = await new DeadLetterQueue(client, QUEUE).send(letters);
    expect([...failed].sort()).toEqual(
      letters
        .slice(10)
        .map((l) => l.messageId)
        .sort(),
    );
  });

  it('passes the signal to every call', async () => {
    const { client, calls } = recordingClient();
    const controller = new AbortController();
    await new DeadLetterQueue(client, QUEUE).send(
      Array.from({ length: 11 }, () => letter()),
      { signal: controller.signal },
    );
    expect(calls.map((c) => c.signal)).toEqual([controller.signal, controller.signal]);
  });
});

describe('DeadLetterQueue entries', () => {
  async function entryOf(l: DeadLetter, queue = QUEUE): Promise<SendMessageBatchRequestEntry> {
    const { client, calls } = recordingClient();
    await new DeadLetterQueue(client, queue).send([l]);
    return calls[0]!.entries[0]!;
  }

  it('carries the body verbatim and the reason, error, detail, source id and tenant as string attributes', async () => {
    const l = letter();
    const entry = await entryOf(l);
    expect(entry.MessageBody).toBe(l.body);
    expect(entry.MessageAttributes).toEqual({
      reason: { DataType: 'String', StringValue: 'schema' },
      errorName: { DataType: 'String', StringValue: 'InvalidMessageError' },
      detail: { DataType: 'String', StringValue: 'op: required' },
      sourceMessageId: { DataType: 'String', StringValue: l.messageId },
      tenant: { DataType: 'String', StringValue: 'acme' },
    });
    expect(entry.MessageGroupId).toBeUndefined();
    expect(entry.MessageDeduplicationId).toBeUndefined();
  });

  it('names an empty body, and leaves out the tenant and an empty detail', async () => {
    const { tenant: _tenant, ...noTenant } = letter({ body: '', detail: '' });
    const entry = await entryOf(noTenant);
    expect(entry.MessageBody).toBe('(empty body)');
    expect(attr(entry, 'detail')).toBe('-');
    expect(entry.MessageAttributes).not.toHaveProperty('tenant');
  });

  it('keeps 500 characters of detail, never half a surrogate pair', async () => {
    expect(attr(await entryOf(letter({ detail: 'd'.repeat(500) })), 'detail')).toBe('d'.repeat(500));
    expect(attr(await entryOf(letter({ detail: 'd'.repeat(501) })), 'detail')).toBe('d'.repeat(500));
    // 499 characters, then an emoji whose high surrogate is the 500th unit: it is dropped whole.
    const cut = attr(await entryOf(letter({ detail: `${'d'.repeat(499)}😀tail` })), 'detail');
    expect(cut).toBe('d'.repeat(499));
    // A detail within the limit is kept whole, even one ending in a lone high surrogate (sent escaped).
    const lone = attr(await entryOf(letter({ detail: `${'d'.repeat(499)}\ud800` })), 'detail');
    expect(lone).toBe(`${'d'.repeat(499)}\\ud800`);
    // A pair well inside the cut does not shorten it.
    const early = attr(await entryOf(letter({ detail: `😀${'d'.repeat(600)}` })), 'detail');
    expect(early).toBe(`😀${'d'.repeat(498)}`);
  });

  it('cuts a body over 240 KiB to 240 KiB, with its full size and SHA-256 as attributes', async () => {
    const body = 'x'.repeat(DEAD_LETTER_FORMAT.maxBodyBytes + 10);
    const entry = await entryOf(letter({ body }));
    expect(entry.MessageBody).toBe('x'.repeat(DEAD_LETTER_FORMAT.maxBodyBytes));
    expect(entry.MessageAttributes?.originalBodyBytes).toEqual({
      DataType: 'Number',
      StringValue: String(DEAD_LETTER_FORMAT.maxBodyBytes + 10),
    });
    expect(attr(entry, 'originalBodySha256')).toBe(createHash('sha256').update(body).digest('hex'));

    const atLimit = await entryOf(letter({ body: 'y'.repeat(DEAD_LETTER_FORMAT.maxBodyBytes) }));
    expect(atLimit.MessageBody).toHaveLength(DEAD_LETTER_FORMAT.maxBodyBytes);
    expect(atLimit.MessageAttributes).not.toHaveProperty('originalBodyBytes');
  });

  it('measures the body in UTF-8 bytes, not characters', async () => {
    // 100,000 three-byte characters: 300,000 bytes, over the limit though only 100,000 UTF-16 units.
    const entry = await entryOf(letter({ body: '€'.repeat(100_000) }));
    expect(Buffer.byteLength(entry.MessageBody!)).toBeLessThanOrEqual(DEAD_LETTER_FORMAT.maxBodyBytes);
    expect(attr(entry, 'originalBodyBytes')).toBe('300000');
  });

  it("names its record's origin for a redrive: the origin's id and send time and the source queue", async () => {
    // A deferred copy: a new SQS message standing for its origin, sent at 1700000000000.
    const copy = sqsRecord('{}', 'copy-1');
    copy.messageAttributes = {
      [DEFERRAL_ATTRIBUTES.origin]: { dataType: 'String', stringValue: 'origin-1' },
      [DEFERRAL_ATTRIBUTES.originSent]: { dataType: 'Number', stringValue: '1700000000000' },
    };
    const entry = await entryOf(letter({ messageId: copy.messageId, source: letterSourceOf(copy) }));
    expect(entry.MessageAttributes).toMatchObject({
      sourceMessageId: { DataType: 'String', StringValue: 'origin-1' },
      sourceQueueArn: { DataType: 'String', StringValue: copy.eventSourceARN },
      [DEFERRAL_ATTRIBUTES.originSent]: { DataType: 'Number', StringValue: '1700000000000' },
    });
    // A producer's own message: its id and its SentTimestamp.
    const own = sqsRecord('{}', 'own-1');
    expect(letterSourceOf(own)).toEqual({
      originId: 'own-1',
      originSentAt: own.attributes.SentTimestamp,
      sourceArn: own.eventSourceARN,
    });
  });

  it('leaves out an origin send time that is not a positive integer', async () => {
    for (const originSentAt of [undefined, '', '0', '-5', '1.5', 'soon', '9007199254740993']) {
      const source = { originId: 'origin-1', originSentAt, sourceArn: 'arn:aws:sqs:us-east-1:0:ingest' };
      const entry = await entryOf(letter({ source }));
      expect(attr(entry, 'sourceQueueArn')).toBe(source.sourceArn);
      expect(entry.MessageAttributes).not.toHaveProperty(DEFERRAL_ATTRIBUTES.originSent);
    }
  });

  it('a FIFO DLQ files a letter under its source group when that is a valid group id, else the fallback group', async () => {
    const fifo = `${QUEUE}.fifo`;
    const dedup = (id: string) => createHash('sha256').update(id).digest('hex');
    const valid = letter({ messageGroupId: 'g'.repeat(128) });
    expect(await entryOf(valid, fifo)).toMatchObject({
      MessageGroupId: 'g'.repeat(128),
      MessageDeduplicationId: dedup(valid.messageId),
    });
    for (const messageGroupId of ['g'.repeat(129), 'has space', '', undefined]) {
      const l = letter(messageGroupId === undefined ? {} : { messageGroupId });
      expect(await entryOf(l, fifo)).toMatchObject({
        MessageGroupId: DEAD_LETTER_FORMAT.groupId,
        MessageDeduplicationId: dedup(l.messageId),
      });
    }
  });
});
