// `s3-ingest dlq redrive` against an in-memory SQS and an injected clock: what moves where, with which
// attributes, at which pace, what stays and why, and the exit code an operator's script sees.
import type { MessageAttributeValue } from '@aws-sdk/client-sqs';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { FakeClock, FakeSqs, queueArn, queueUrl, str } from './fake-sqs.js';
import { runCommand } from './run-command.js';

const fake = { current: new FakeSqs(new FakeClock()) };
vi.mock('../../../../lib/cli/clients.js', () => ({ sqsClientFromEnv: () => fake.current }));
const { dlqRedriveCommand, DLQ_REDRIVE_HELP } = await import('../../../../lib/cli/dlq/redrive.js');

const DAY = 86_400_000;
let clock: FakeClock;
let sqs: FakeSqs;
beforeEach(() => {
  clock = new FakeClock();
  sqs = new FakeSqs(clock);
  fake.current = sqs;
  sqs.queues.set(queueUrl('ingest'), []);
  sqs.queues.set(queueUrl('other'), []);
  sqs.queues.set(queueUrl('dlq'), []);
});

const redrive = (argv: string[], options: { terminalAnswer?: string } = {}) =>
  runCommand(
    (a, io) => dlqRedriveCommand(a, io, { clock }),
    ['--dlq-url', queueUrl('dlq'), ...argv],
    options,
  );

/** A message SQS moved from `source` after maxReceiveCount, sent `ageMs` ago. */
function moved(id: string, body = `{"id":"${id}"}`, source = 'ingest', ageMs = 1000, own = {}) {
  sqs.add('dlq', id, body, own, {
    SentTimestamp: String(clock.now() - ageMs),
    DeadLetterQueueSourceArn: queueArn(source),
  });
}

/** A letter the function wrote: reason, the original's id and send time, its source queue. */
function rejected(id: string, reason: string, extra: Record<string, MessageAttributeValue> = {}) {
  sqs.add(
    'dlq',
    id,
    `{"id":"${id}"}`,
    {
      reason: str(reason),
      errorName: str('InvalidMessageError'),
      detail: str('why'),
      sourceMessageId: str(`orig-${id}`),
      sourceQueueArn: str(queueArn('ingest')),
      's3-ingest-origin-sent': { DataType: 'Number', StringValue: String(clock.now() - 500) },
      ...extra,
    },
    { SentTimestamp: String(clock.now() - 100) },
  );
}

describe('dlq redrive: what a copy carries', () => {
  it("sends a moved message back to its source queue with the producer's and the origin's attributes, then deletes it", async () => {
    moved('m-1', '{"v":1}', 'ingest', 1000, { trace: str('t-1'), tenant: str('acme') });
    const r = await redrive(['--yes']);
    expect(r).toEqual({
      code: 0,
      stdout: 'moved 1 message(s) to the queue each came from; 0 left\n',
      stderr: '',
    });
    expect(sqs.messages('ingest')).toEqual([
      expect.objectContaining({
        Body: '{"v":1}',
        MessageAttributes: {
          trace: str('t-1'),
          tenant: str('acme'),
          's3-ingest-origin': str('m-1'),
          's3-ingest-origin-sent': { DataType: 'Number', StringValue: String(clock.now() - 1000) },
        },
      }),
    ]);
    expect(sqs.messages('dlq')).toEqual([]);
    expect(sqs.destroyed).toBe(true);
  });

  it("keeps a copy's origin: the origin attributes it already carries win over its own id and send time", async () => {
    moved('copy-2', '{"v":1}', 'ingest', 1000, {
      's3-ingest-origin': str('first'),
      's3-ingest-origin-sent': { DataType: 'Number', StringValue: '123456' },
      's3-ingest-deferrals': { DataType: 'Number', StringValue: '3' },
    });
    expect((await redrive(['--yes', '--past-horizon'])).code).toBe(0);
    expect(sqs.messages('ingest')[0]?.MessageAttributes).toEqual({
      's3-ingest-origin': str('first'),
      's3-ingest-origin-sent': { DataType: 'Number', StringValue: '123456' },
      's3-ingest-deferrals': { DataType: 'Number', StringValue: '3' },
    });
  });

  it("reads a function's letter: its original's id and send time, its source queue; its own attributes stay behind", async () => {
    rejected('r-1', 'record-not-found', { tenant: str('acme') });
    expect((await redrive(['--yes'])).code).toBe(0);
    expect(sqs.messages('ingest')[0]?.MessageAttributes).toEqual({
      's3-ingest-origin': str('orig-r-1'),
      's3-ingest-origin-sent': { DataType: 'Number', StringValue: String(clock.now() - 500) },
    });
  });

  it('leaves a letter whose copy would carry more than 10 attributes', async () => {
    const own = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`a${i}`, str('x')]));
    moved('wide', '{}', 'ingest', 1000, own);
    moved('fits', '{}', 'ingest', 1000, Object.fromEntries(Object.entries(own).slice(0, 8)));
    const r = await redrive(['--yes']);
    expect(r.stdout).toBe(
      'moved 1 message(s) to the queue each came from; 1 with too many attributes for a copy left (export them); 1 left\n',
    );
  });
});

describe('dlq redrive: where each letter goes', () => {
  it('routes by source queue, leaves unknown sources, and with --to only moves letters from that queue', async () => {
    moved('a', '{"a":1}', 'ingest');
    moved('b', '{"b":1}', 'other');
    moved('gone', '{"g":1}', 'deleted-queue');
    sqs.add('dlq', 'no-source', '{}', {}, { SentTimestamp: String(clock.now()) });
    sqs.add(
      'dlq',
      'bad-arn',
      '{}',
      {},
      { SentTimestamp: String(clock.now()), DeadLetterQueueSourceArn: 'not-an-arn' },
    );
    const onlyOther = await redrive(['--yes', '--to', queueUrl('other'), '--json']);
    expect(JSON.parse(onlyOther.stdout)).toEqual({
      moved: 1,
      refused: 0,
      skipped: { 'other-source': 3, 'unknown-source': 1 },
      left: 4,
    });
    expect(sqs.bodies('other')).toEqual(['{"b":1}']);
    const rest = await redrive(['--yes']);
    expect(rest.stdout).toBe(
      'moved 1 message(s) to the queue each came from; 3 from an unknown source queue left; 3 left\n',
    );
    expect(sqs.bodies('ingest')).toEqual(['{"a":1}']);
  });

  it('looks a source queue up once however many letters name it', async () => {
    for (let i = 0; i < 12; i++) moved(`m-${i}`);
    expect((await redrive(['--yes'])).code).toBe(0);
    expect(sqs.callsOf('GetQueueUrlCommand')).toEqual([
      { QueueName: 'ingest', QueueOwnerAWSAccountId: '000000000000' },
    ]);
    expect(sqs.bodies('ingest')).toHaveLength(12);
  });

  it('gives a FIFO destination the group of each letter (or "redrive") and the letter id as deduplication id', async () => {
    sqs.queues.set(queueUrl('ingest.fifo'), []);
    sqs.add(
      'dlq',
      'f-1',
      '{}',
      {},
      { SentTimestamp: '5', DeadLetterQueueSourceArn: queueArn('ingest.fifo'), MessageGroupId: 'g-7' },
    );
    sqs.add(
      'dlq',
      'f-2',
      '{}',
      {},
      { SentTimestamp: '6', DeadLetterQueueSourceArn: queueArn('ingest.fifo') },
    );
    moved('plain');
    expect((await redrive(['--yes', '--past-horizon'])).code).toBe(0);
    const entries = sqs.callsOf('SendMessageBatchCommand').flatMap((c) => c.Entries as object[]);
    expect(entries).toEqual([
      expect.objectContaining({ MessageGroupId: 'g-7', MessageDeduplicationId: 'f-1' }),
      expect.objectContaining({ MessageGroupId: 'redrive', MessageDeduplicationId: 'f-2' }),
      expect.not.objectContaining({ MessageGroupId: expect.anything() }),
    ]);
    expect(entries[2]).not.toHaveProperty('MessageDeduplicationId');
  });
});

describe('dlq redrive: what stays', () => {
  it('leaves contract rejections unless --include-rejected, truncated bodies always, letters without an origin time', async () => {
    rejected('bad-json', 'invalid-json');
    rejected('schema', 'schema-violation');
    rejected('cut', 'record-not-found', { originalBodyBytes: { DataType: 'Number', StringValue: '300000' } });
    rejected('timeless', 'record-not-found', {
      's3-ingest-origin-sent': { DataType: 'Number', StringValue: '0' },
    });
    rejected('fine', 'record-not-found');
    const first = await redrive(['--yes']);
    expect(first.stdout).toBe(
      "moved 1 message(s) to the queue each came from; 2 contract rejection(s) left (--include-rejected moves them); 1 truncated message(s) left (export them); 1 without their origin's send time left; 4 left\n",
    );
    const second = await redrive(['--yes', '--include-rejected', '--json']);
    expect(JSON.parse(second.stdout)).toEqual({
      moved: 2,
      refused: 0,
      skipped: { truncated: 1, 'unknown-origin-time': 1 },
      left: 2,
    });
  });

  it('refuses a contract reason without --include-rejected before touching the queue', async () => {
    rejected('bad-json', 'invalid-json');
    const r = await redrive(['--yes', '--reason', 'invalid-json']);
    expect(r.code).toBe(64);
    expect(r.stderr).toBe(
      's3-ingest dlq redrive: invalid-json is a contract rejection; it fails the same way on every delivery. Pass --include-rejected if the cause (e.g. RESOURCES) was fixed.\n',
    );
    expect(sqs.calls).toEqual([]);
    const asked = await redrive(['--yes', '--reason', 'invalid-json', '--include-rejected']);
    expect(asked.stdout).toBe('moved 1 message(s) to the queue each came from; 0 left\n');
  });

  it('with --reason, moves only that reason and counts the rest as left', async () => {
    rejected('r', 'record-not-found');
    moved('m');
    const r = await redrive(['--yes', '--reason', 'none', '--json']);
    expect(JSON.parse(r.stdout)).toEqual({ moved: 1, refused: 0, skipped: {}, left: 1 });
    expect(sqs.bodies('ingest')).toEqual(['{"id":"m"}']);
  });

  it('leaves letters past the tombstone horizon (4 days unless told), unless --past-horizon', async () => {
    moved('edge', '{"e":1}', 'ingest', 4 * DAY);
    moved('old', '{"o":1}', 'ingest', 4 * DAY + 1);
    moved('older', '{"o":2}', 'ingest', 10 * DAY + 1);
    const r = await redrive(['--yes']);
    expect(r.stdout).toBe(
      'moved 1 message(s) to the queue each came from; 2 older than the tombstone horizon left (--past-horizon moves them); 2 left\n',
    );
    expect(JSON.parse((await redrive(['--yes', '--tombstone-days', '10', '--json'])).stdout)).toMatchObject({
      moved: 1,
      skipped: { 'past-tombstone-horizon': 1 },
    });
    expect(JSON.parse((await redrive(['--yes', '--past-horizon', '--json'])).stdout)).toMatchObject({
      moved: 1,
    });
    expect(sqs.messages('dlq')).toEqual([]);
  });

  it('moves what was there when it started, each origin once: later letters and second letters of an origin stay', async () => {
    moved('before', '{"b":1}');
    sqs.add(
      'dlq',
      'after',
      '{}',
      {},
      { SentTimestamp: String(clock.now() + 1), DeadLetterQueueSourceArn: queueArn('ingest') },
    );
    moved('twin-1', '{"t":1}', 'ingest', 1000, { 's3-ingest-origin': str('same') });
    moved('twin-2', '{"t":2}', 'ingest', 1000, { 's3-ingest-origin': str('same') });
    const r = await redrive(['--yes']);
    expect(r.stdout).toBe(
      'moved 2 message(s) to the queue each came from; 1 arrived since the redrive started, left; 1 copies of a message this run already moved, left; 2 left\n',
    );
  });

  it('--limit moves at most that many', async () => {
    for (let i = 0; i < 5; i++) moved(`m-${i}`);
    const r = await redrive(['--yes', '--limit', '2', '--json']);
    expect(JSON.parse(r.stdout)).toMatchObject({ moved: 2 });
    expect(sqs.messages('dlq')).toHaveLength(3);
  });
});

describe('dlq redrive: refused sends and exit codes', () => {
  it('keeps every letter the destination refused or did not list, says which, and exits 1', async () => {
    for (let i = 0; i < 12; i++) moved(`m-${i}`);
    sqs.fateOf = (e) =>
      e.MessageBody === '{"id":"m-3"}' ? 'failed' : e.MessageBody === '{"id":"m-11"}' ? 'unlisted' : 'ok';
    const r = await redrive(['--yes']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('not moved: m-3: Refused: no\nnot moved: m-11: not listed by SQS\n');
    expect(r.stdout).toBe(
      'moved 10 message(s) to the queue each came from; 2 refused by the destination; 2 left\n',
    );
    expect(sqs.messages('dlq').map((m) => m.MessageId)).toEqual(['m-3', 'm-11']);
    expect(sqs.bodies('ingest')).toHaveLength(10);
  });

  it('names --to as the refusing queue, and a failed request refuses its whole batch', async () => {
    moved('m-1');
    moved('m-2');
    sqs.sendError = Object.assign(new Error('connection reset'), { name: 'TimeoutError' });
    const r = await redrive(['--yes', '--to', queueUrl('ingest')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'not moved: m-1: TimeoutError: connection reset\nnot moved: m-2: TimeoutError: connection reset\n',
    );
    expect(r.stdout).toBe(
      `moved 0 message(s) to ${queueUrl('ingest')}; 2 refused by ${queueUrl('ingest')}; 2 left\n`,
    );
    expect(sqs.messages('dlq')).toHaveLength(2);
  });

  it('a Failed entry without a message still names its code', async () => {
    moved('m-1');
    sqs.fateOf = () => 'failed';
    const send = sqs.send.bind(sqs);
    sqs.send = async (command) => {
      const out = (await send(command)) as { Failed?: { Message?: string }[] };
      for (const f of out.Failed ?? []) delete f.Message;
      return out;
    };
    expect((await redrive(['--yes'])).stderr).toBe('not moved: m-1: Refused: \n');
  });
});

describe('dlq redrive: pacing (--rate) on the injected clock', () => {
  it('sends at most N a second, in batches of up to 10', async () => {
    for (let i = 0; i < 25; i++) moved(`m-${i}`);
    const r = await redrive(['--yes', '--rate', '10']);
    expect(r.code).toBe(0);
    expect(sqs.callsOf('SendMessageBatchCommand').map((c) => (c.Entries as object[]).length)).toEqual([
      10, 10, 5,
    ]);
    // The first 10 leave at once, the next 10 one second later, the last 5 at two seconds.
    expect(clock.sleeps).toEqual([1000, 1000]);
  });

  it('below 10 a second, sends batches of the rate (at least 1) spaced to it', async () => {
    for (let i = 0; i < 5; i++) moved(`m-${i}`);
    expect((await redrive(['--yes', '--rate', '2.5'])).code).toBe(0);
    expect(sqs.callsOf('SendMessageBatchCommand').map((c) => (c.Entries as object[]).length)).toEqual([
      2, 2, 1,
    ]);
    expect(clock.sleeps).toEqual([800, 800]);
    clock.sleeps.length = 0;
    moved('x');
    moved('y');
    expect((await redrive(['--yes', '--rate', '0.5'])).code).toBe(0);
    expect(clock.sleeps).toEqual([2000]);
  });

  it('the default rate is 50 a second', async () => {
    for (let i = 0; i < 60; i++) moved(`m-${i}`);
    expect((await redrive(['--yes'])).code).toBe(0);
    expect(clock.sleeps).toEqual([200, 200, 200, 200, 200]);
  });
});

describe('dlq redrive: long scans', () => {
  it('keeps what it holds hidden however long the scan takes: each letter received once, the rest handed back', async () => {
    for (let i = 0; i < 30; i++) moved(`m-${i}`);
    rejected('stays', 'invalid-json');
    sqs.receiveTakesMs = 25_000;
    const r = await redrive(['--yes', '--rate', '1']);
    expect(r.code).toBe(0);
    expect(sqs.bodies('ingest')).toHaveLength(30);
    expect(sqs.receivesOf('dlq')).toEqual([1]);
    const visibility = sqs
      .callsOf('ChangeMessageVisibilityBatchCommand')
      .flatMap((c) => (c.Entries as { VisibilityTimeout: number }[]).map((e) => e.VisibilityTimeout));
    expect(visibility).toContain(60);
    expect(visibility.at(-1)).toBe(0);
  });
});

describe('dlq redrive: input and confirmation', () => {
  it.each([
    [[]],
    [['--rate', '0']],
    [['--rate', 'fast']],
    [['--limit', '0']],
    [['--limit', '1.5']],
    [['--tombstone-days', '0']],
    [['--tombstone-days', '2.5']],
  ])('refuses %j as a usage error, printing the help', async (argv) => {
    const args = argv.length === 0 ? ['--yes'] : ['--yes', ...argv];
    const r = await runCommand(
      (a, io) => dlqRedriveCommand(a, io, { clock }),
      argv.length === 0 ? args : ['--dlq-url', queueUrl('dlq'), ...args],
    );
    expect(r.code).toBe(64);
    expect(r.stderr).toBe(`${DLQ_REDRIVE_HELP}\n`);
    expect(sqs.calls).toEqual([]);
  });

  it('prints its help', async () => {
    expect(await redrive(['--help'])).toEqual({ code: 0, stdout: `${DLQ_REDRIVE_HELP}\n`, stderr: '' });
  });

  it('asks first: not on a terminal is a usage error, "n" is a failure, "y" moves', async () => {
    moved('m-1');
    const piped = await redrive([]);
    expect(piped.code).toBe(64);
    expect(piped.stderr).toBe(
      's3-ingest dlq redrive: refusing to delete messages without confirmation: run on a terminal, or pass --yes\n',
    );
    const declined = await redrive(['--reason', 'none', '--include-rejected'], { terminalAnswer: 'n' });
    expect(declined.code).toBe(1);
    expect(declined.stderr).toBe(
      `Move messages with reason none (contract rejections included) from ${queueUrl('dlq')} to the queue each came from, deleting each from the source once sent? [y/N] s3-ingest dlq redrive: nothing changed\n`,
    );
    expect(sqs.calls).toEqual([]);
    const yes = await redrive(['--to', queueUrl('ingest')], { terminalAnswer: 'y' });
    expect(yes.code).toBe(0);
    expect(yes.stderr).toBe(
      `Move messages from ${queueUrl('dlq')} to ${queueUrl('ingest')}, deleting each from the source once sent? [y/N] `,
    );
  });
});
