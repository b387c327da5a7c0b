// SqsDeferrals against a recording SQS client (no emulator): which records become copies, how copies are
// grouped by queue and packed into SendMessageBatch calls, what each copy carries, and what SQS's partial
// answers, failures and an aborted signal make of them. MemoryDeferrals at the end.
import type {
  MessageAttributeValue,
  SendMessageBatchRequestEntry,
  SendMessageBatchResult,
} from '@aws-sdk/client-sqs';
import type { SQSMessageAttributes, SQSRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import {
  DEFERRAL_ATTRIBUTES,
  type Deferral,
} from '../../../../../lib/ingest/handler/settle/deferral-port.js';
import { clampDelaySeconds, SqsDeferrals } from '../../../../../lib/ingest/handler/settle/deferral-queue.js';
import { MemoryDeferrals } from '../../../../../lib/ingest/handler/settle/memory-deferrals.js';
import { allSent, batchBytes, recordingClient } from '../recording-sqs.js';
import { sqsRecord } from '../support.js';

const INGEST_ARN = 'arn:aws:sqs:us-east-1:000000000000:ingest';
const INGEST_URL = 'https://sqs.us-east-1.amazonaws.com/000000000000/ingest';
const OTHER_ARN = 'arn:aws:sqs:eu-west-1:111122223333:billing';
const OTHER_URL = 'https://sqs.eu-west-1.amazonaws.com/111122223333/billing';

let sequence = 0;
function record(overrides: Partial<SQSRecord> = {}): SQSRecord {
  sequence++;
  return { ...sqsRecord(`{"v":1,"n":${sequence}}`, `m-${sequence}`), ...overrides };
}
const deferral = (r: SQSRecord, delaySeconds = 5): Deferral => ({ record: r, delaySeconds });
const strings = (values: Record<string, string>): SQSMessageAttributes =>
  Object.fromEntries(Object.entries(values).map(([k, v]) => [k, { dataType: 'String', stringValue: v }]));

const signal = () => new AbortController().signal;
const sorted = (ids: Iterable<string>) => [...ids].sort();
const origin = (e: SendMessageBatchRequestEntry) =>
  e.MessageAttributes?.[DEFERRAL_ATTRIBUTES.origin]?.StringValue;

describe('SqsDeferrals groups and packs copies', () => {
  it("sends at most 10 entries per call to the record's own queue, ids 0..n-1, in order", async () => {
    const { client, calls } = recordingClient();
    const records = Array.from({ length: 23 }, () => record());
    const notDeferred = await new SqsDeferrals(client).defer(
      records.map((r) => deferral(r)),
      {
        signal: signal(),
      },
    );
    expect([...notDeferred]).toEqual([]);
    expect(calls.map((c) => c.entries.length)).toEqual([10, 10, 3]);
    for (const call of calls) {
      expect(call.queueUrl).toBe(INGEST_URL);
      expect(call.entries.map((e) => e.Id)).toEqual(call.entries.map((_, i) => String(i)));
    }
    expect(calls.flatMap((c) => c.entries.map(origin))).toEqual(records.map((r) => r.messageId));
  });

  it('starts a new request before one would exceed 250 KiB of what is sent', async () => {
    const { client, calls } = recordingClient();
    const records = Array.from({ length: 5 }, () => record({ body: 'b'.repeat(100_000) }));
    await new SqsDeferrals(client).defer(
      records.map((r) => deferral(r)),
      { signal: signal() },
    );
    expect(calls.map((c) => c.entries.length)).toEqual([2, 2, 1]);
    for (const call of calls) expect(batchBytes(call.entries)).toBeLessThanOrEqual(250 * 1024);
  });

  it('counts attributes, binary ones by their decoded bytes, against the request size', async () => {
    const { client, calls } = recordingClient();
    // 3 x 80,000-byte bodies are 240,000 bytes; with 6,000 bytes of binary attribute each they are not.
    const records = Array.from({ length: 3 }, () =>
      record({
        body: 'b'.repeat(80_000),
        messageAttributes: {
          blob: { dataType: 'Binary', binaryValue: Buffer.alloc(6_000, 7).toString('base64') },
        },
      }),
    );
    await new SqsDeferrals(client).defer(
      records.map((r) => deferral(r)),
      { signal: signal() },
    );
    expect(calls.map((c) => c.entries.length)).toEqual([2, 1]);
    for (const call of calls) expect(batchBytes(call.entries)).toBeLessThanOrEqual(250 * 1024);
  });

  it('sends each queue its own records, in separate requests', async () => {
    const { client, calls } = recordingClient();
    const a = [
      record(),
      record({ eventSourceARN: OTHER_ARN }),
      record(),
      record({ eventSourceARN: OTHER_ARN }),
    ];
    const notDeferred = await new SqsDeferrals(client).defer(
      a.map((r) => deferral(r)),
      { signal: signal() },
    );
    expect([...notDeferred]).toEqual([]);
    const byQueue = Object.fromEntries(calls.map((c) => [c.queueUrl, c.entries.map(origin)]));
    expect(byQueue).toEqual({
      [INGEST_URL]: [a[0]!.messageId, a[2]!.messageId],
      [OTHER_URL]: [a[1]!.messageId, a[3]!.messageId],
    });
    expect(calls).toHaveLength(2);
  });

  it('sends nothing for no deferrals', async () => {
    const { client, calls } = recordingClient();
    expect([...(await new SqsDeferrals(client).defer([], { signal: signal() }))]).toEqual([]);
    expect(calls).toEqual([]);
  });
});

describe('SqsDeferrals copies a record', () => {
  async function entryOf(r: SQSRecord, delaySeconds = 5): Promise<SendMessageBatchRequestEntry> {
    const { client, calls } = recordingClient();
    const notDeferred = await new SqsDeferrals(client).defer([deferral(r, delaySeconds)], {
      signal: signal(),
    });
    expect([...notDeferred]).toEqual([]);
    expect(calls).toHaveLength(1);
    return calls[0]!.entries[0]!;
  }

  it("with its body verbatim, the producer's attributes converted, origin and a first deferral count", async () => {
    const body = '{"v":1,"tenant":"acme","data":{"s":"ü €"}}';
    const bytes = Buffer.from([0, 1, 2, 250, 255]);
    const r = record({
      body,
      messageAttributes: {
        trace: { dataType: 'String', stringValue: 'abc' },
        count: { dataType: 'Number.int', stringValue: '42' },
        blob: { dataType: 'Binary.gz', binaryValue: bytes.toString('base64'), stringListValues: [] },
      },
    });
    const entry = await entryOf(r);
    expect(entry.MessageBody).toBe(body);
    const attributes = entry.MessageAttributes as Record<string, MessageAttributeValue>;
    expect(Object.keys(attributes).sort()).toEqual(
      [
        'blob',
        'count',
        DEFERRAL_ATTRIBUTES.deferrals,
        DEFERRAL_ATTRIBUTES.origin,
        DEFERRAL_ATTRIBUTES.originSent,
        'trace',
      ].sort(),
    );
    expect(attributes.trace).toEqual({ DataType: 'String', StringValue: 'abc' });
    expect(attributes.count).toEqual({ DataType: 'Number.int', StringValue: '42' });
    expect(attributes.blob!.DataType).toBe('Binary.gz');
    expect(Buffer.from(attributes.blob!.BinaryValue!)).toEqual(bytes);
    expect(attributes.blob!.StringValue).toBeUndefined();
    expect(attributes[DEFERRAL_ATTRIBUTES.origin]).toEqual({ DataType: 'String', StringValue: r.messageId });
    expect(attributes[DEFERRAL_ATTRIBUTES.deferrals]).toEqual({ DataType: 'Number', StringValue: '1' });
    expect(attributes[DEFERRAL_ATTRIBUTES.originSent]).toEqual({
      DataType: 'Number',
      StringValue: r.attributes.SentTimestamp,
    });
  });

  it("keeps a copy's origin sent time, and sends none for a record without a usable one", async () => {
    const copy = record({
      messageAttributes: strings({ [DEFERRAL_ATTRIBUTES.originSent]: '1700000000000' }),
    });
    expect((await entryOf(copy)).MessageAttributes![DEFERRAL_ATTRIBUTES.originSent]).toEqual({
      DataType: 'Number',
      StringValue: '1700000000000',
    });
    const r = record();
    r.attributes.SentTimestamp = '';
    expect((await entryOf(r)).MessageAttributes![DEFERRAL_ATTRIBUTES.originSent]).toBeUndefined();
    const forged = record({ messageAttributes: strings({ [DEFERRAL_ATTRIBUTES.originSent]: 'soon' }) });
    forged.attributes.SentTimestamp = '';
    expect((await entryOf(forged)).MessageAttributes![DEFERRAL_ATTRIBUTES.originSent]).toBeUndefined();
  });

  it('keeps the origin of a copy and counts one more deferral, replacing what the record carried', async () => {
    const r = record({
      messageAttributes: strings({
        [DEFERRAL_ATTRIBUTES.origin]: 'first-message',
        [DEFERRAL_ATTRIBUTES.deferrals]: '3',
      }),
    });
    r.messageAttributes[DEFERRAL_ATTRIBUTES.deferrals]!.dataType = 'Number';
    const attributes = (await entryOf(r)).MessageAttributes!;
    expect(attributes[DEFERRAL_ATTRIBUTES.origin]).toEqual({
      DataType: 'String',
      StringValue: 'first-message',
    });
    expect(attributes[DEFERRAL_ATTRIBUTES.deferrals]).toEqual({ DataType: 'Number', StringValue: '4' });
    expect(Object.keys(attributes)).toHaveLength(3);
  });

  it("overwrites a producer's malformed values under the two names", async () => {
    const r = record({
      messageAttributes: strings({
        [DEFERRAL_ATTRIBUTES.origin]: '',
        [DEFERRAL_ATTRIBUTES.deferrals]: 'many',
      }),
    });
    const attributes = (await entryOf(r)).MessageAttributes!;
    expect(attributes[DEFERRAL_ATTRIBUTES.origin]).toEqual({ DataType: 'String', StringValue: r.messageId });
    expect(attributes[DEFERRAL_ATTRIBUTES.deferrals]).toEqual({ DataType: 'Number', StringValue: '1' });
  });

  it.each([
    [30, 30],
    [0, 0],
    [-5, 0],
    [900, 900],
    [901, 900],
    [2.2, 3],
    [Number.NaN, 0],
    [Number.POSITIVE_INFINITY, 900],
  ])('delays %d s as DelaySeconds %d', async (asked, sent) => {
    expect((await entryOf(record(), asked)).DelaySeconds).toBe(sent);
    expect(clampDelaySeconds(asked)).toBe(sent);
  });

  it('sends no FIFO fields', async () => {
    const entry = await entryOf(record());
    expect(entry).not.toHaveProperty('MessageGroupId');
    expect(entry).not.toHaveProperty('MessageDeduplicationId');
  });
});

describe('SqsDeferrals refuses what it cannot copy', () => {
  it('FIFO sources, unparseable ARNs, empty bodies, attributes without a value: not deferred, not sent', async () => {
    const { client, calls } = recordingClient();
    const fifo = record({ eventSourceARN: `${INGEST_ARN}.fifo` });
    const unparseable = record({ eventSourceARN: 'arn:aws:sqs:us-east-1:not-an-account:ingest' });
    const notSqs = record({ eventSourceARN: 'arn:aws:kinesis:us-east-1:000000000000:stream/ingest' });
    const empty = record({ body: '' });
    const noValue = record({ messageAttributes: { a: { dataType: 'String' } } });
    const noBinary = record({ messageAttributes: { a: { dataType: 'Binary', stringValue: 'x' } } });
    const fine = record();
    const refused = [fifo, unparseable, notSqs, empty, noValue, noBinary];
    const notDeferred = await new SqsDeferrals(client).defer(
      [...refused, fine].map((r) => deferral(r)),
      { signal: signal() },
    );
    expect(sorted(notDeferred)).toEqual(sorted(refused.map((r) => r.messageId)));
    expect(calls.flatMap((c) => c.entries.map(origin))).toEqual([fine.messageId]);
  });

  it('a record with more than 7 attributes of its own (10 with the three added) is not deferred', async () => {
    const { client, calls } = recordingClient();
    const names = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`a${i}`, 'v']));
    const eight = record({ messageAttributes: strings(names(7)) });
    const nine = record({ messageAttributes: strings(names(8)) });
    // Its own attributes under the three names do not count twice: 7 others + the 3 replaced = 10.
    const replacing = record({
      messageAttributes: strings({
        ...names(7),
        [DEFERRAL_ATTRIBUTES.origin]: 'o',
        [DEFERRAL_ATTRIBUTES.originSent]: '5',
        [DEFERRAL_ATTRIBUTES.deferrals]: '1',
      }),
    });
    const notDeferred = await new SqsDeferrals(client).defer(
      [eight, nine, replacing].map((r) => deferral(r)),
      {
        signal: signal(),
      },
    );
    expect([...notDeferred]).toEqual([nine.messageId]);
    const sent = calls.flatMap((c) => c.entries);
    expect(sent.map((e) => Object.keys(e.MessageAttributes!).length)).toEqual([10, 10]);
  });
});

describe('SqsDeferrals reports what SQS did not take', () => {
  it('an entry listed in Failed, or in neither list, is not deferred; the rest are', async () => {
    const { client } = recordingClient(() => ({
      Successful: [{ Id: '0' }, { Id: '3' }] as never,
      Failed: [{ Id: '1', Code: 'InternalError', SenderFault: false }],
    }));
    const records = Array.from({ length: 4 }, () => record());
    const notDeferred = await new SqsDeferrals(client).defer(
      records.map((r) => deferral(r)),
      { signal: signal() },
    );
    expect(sorted(notDeferred)).toEqual(sorted([records[1]!.messageId, records[2]!.messageId]));
  });

  it('an answer with neither list defers nothing', async () => {
    const { client } = recordingClient(() => ({}) as SendMessageBatchResult);
    const records = [record(), record()];
    const notDeferred = await new SqsDeferrals(client).defer(
      records.map((r) => deferral(r)),
      { signal: signal() },
    );
    expect(sorted(notDeferred)).toEqual(sorted(records.map((r) => r.messageId)));
  });

  it('a rejected request fails its own entries only (other requests, other queues)', async () => {
    const { client, calls } = recordingClient((entries, call) =>
      call === 1 ? new Error('socket hang up') : allSent(entries, call),
    );
    const records = [...Array.from({ length: 12 }, () => record()), record({ eventSourceARN: OTHER_ARN })];
    const notDeferred = await new SqsDeferrals(client).defer(
      records.map((r) => deferral(r)),
      { signal: signal() },
    );
    expect(calls).toHaveLength(3);
    expect(sorted(notDeferred)).toEqual(sorted(calls[1]!.entries.map((e) => origin(e)!)));
    expect(notDeferred.size).toBeGreaterThan(0);
  });

  it('passes the signal to every request; aborting it makes the requests in flight not deferred', async () => {
    const controller = new AbortController();
    let answered = 0;
    const { client, calls } = recordingClient((entries, call, abortSignal) => {
      // The first request is answered; the others hang until aborted, as the SDK's would.
      if (call === 0) return allSent(entries, call);
      return new Promise((_, reject) => {
        abortSignal!.addEventListener('abort', () => reject(abortSignal!.reason));
        answered++;
        if (answered === 2) controller.abort(new Error('cutoff'));
      });
    });
    const records = [...Array.from({ length: 20 }, () => record()), record({ eventSourceARN: OTHER_ARN })];
    const notDeferred = await new SqsDeferrals(client).defer(
      records.map((r) => deferral(r)),
      {
        signal: controller.signal,
      },
    );
    expect(calls).toHaveLength(3);
    for (const call of calls) expect(call.signal).toBe(controller.signal);
    const first = new Set(calls[0]!.entries.map((e) => origin(e)!));
    expect(sorted(notDeferred)).toEqual(
      sorted(records.map((r) => r.messageId).filter((id) => !first.has(id))),
    );
  });

  it('an already aborted signal sends nothing and defers nothing', async () => {
    const { client, calls } = recordingClient();
    const controller = new AbortController();
    controller.abort(new Error('cutoff'));
    const records = [record(), record({ eventSourceARN: OTHER_ARN })];
    const notDeferred = await new SqsDeferrals(client).defer(
      records.map((r) => deferral(r)),
      {
        signal: controller.signal,
      },
    );
    expect(sorted(notDeferred)).toEqual(sorted(records.map((r) => r.messageId)));
    expect(calls).toEqual([]);
  });
});

describe('MemoryDeferrals', () => {
  it('keeps what it accepts and reports what it refuses', async () => {
    const port = new MemoryDeferrals();
    const [kept, refused] = [record(), record()];
    port.accept = (d) => d.record !== refused;
    const notDeferred = await port.defer([deferral(kept!, 7), deferral(refused!, 3)]);
    expect([...notDeferred]).toEqual([refused!.messageId]);
    expect([...port.deferred.keys()]).toEqual([kept!.messageId]);
    expect(port.deferred.get(kept!.messageId)?.delaySeconds).toBe(7);
    expect(port.calls).toHaveLength(1);
    expect(port.calls[0]).toHaveLength(2);
  });
});

describe('SqsDeferrals.takes: whether a record could ever be deferred', () => {
  it('takes a standard-queue record, not a FIFO one, one whose ARN names no queue, nor one with too many attributes', () => {
    const port = new SqsDeferrals(recordingClient().client);
    expect(port.takes(record())).toBe(true);
    expect(port.takes(record({ eventSourceARN: `${INGEST_ARN}.fifo` }))).toBe(false);
    expect(port.takes(record({ eventSourceARN: 'not-an-arn' }))).toBe(false);
    const seven = strings(Object.fromEntries(Array.from({ length: 7 }, (_, i) => [`a${i}`, 'v'])));
    expect(port.takes(record({ messageAttributes: seven }))).toBe(true);
    expect(
      port.takes(record({ messageAttributes: { ...seven, a7: { dataType: 'String', stringValue: 'v' } } })),
    ).toBe(false);
  });
});
