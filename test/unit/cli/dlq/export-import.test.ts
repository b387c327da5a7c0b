// `s3-ingest dlq export` and `dlq import` on an in-memory SQS and an injected clock: every attribute kept and
// restored, only a new file written, purge only when confirmed, import checks the whole file first, sends
// only what came from --to, paced, and says what it left.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { FakeClock, FakeSqs, queueArn, queueUrl, str } from './fake-sqs.js';
import { runCommand } from './run-command.js';

const fake = { current: new FakeSqs(new FakeClock()) };
vi.mock('../../../../lib/cli/clients.js', () => ({ sqsClientFromEnv: () => fake.current }));
const { dlqExportCommand, DLQ_EXPORT_HELP } = await import('../../../../lib/cli/dlq/export.js');
const { dlqImportCommand, DLQ_IMPORT_HELP } = await import('../../../../lib/cli/dlq/import.js');

let clock: FakeClock;
let sqs: FakeSqs;
let dir: string;
beforeEach(() => {
  clock = new FakeClock();
  sqs = new FakeSqs(clock);
  fake.current = sqs;
  sqs.queues.set(queueUrl('dlq'), []);
  sqs.queues.set(queueUrl('ingest'), []);
  dir = mkdtempSync(join(tmpdir(), 's3-ingest-dlq-unit-'));
  return () => rmSync(dir, { recursive: true, force: true });
});

const exportTo = (argv: string[], options: { terminalAnswer?: string } = {}) =>
  runCommand((a, io) => dlqExportCommand(a, io, { clock }), ['--dlq-url', queueUrl('dlq'), ...argv], options);
const importFrom = (argv: string[]) => runCommand((a, io) => dlqImportCommand(a, io, { clock }), argv);

const binary = { DataType: 'Binary.gzip', BinaryValue: new Uint8Array([0, 1, 254, 255]) };
function moved(id: string, body = `{"id":"${id}"}`, source = 'ingest', ageMs = 1000) {
  sqs.add(
    'dlq',
    id,
    body,
    { trace: str('t-1'), blob: binary },
    {
      SentTimestamp: String(clock.now() - ageMs),
      DeadLetterQueueSourceArn: queueArn(source),
    },
  );
}
const lines = (file: string) =>
  readFileSync(file, 'utf8')
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe('dlq export', () => {
  it('writes one line per message with every attribute, its origin and system attributes, and keeps the messages', async () => {
    moved('m-1');
    sqs.add(
      'dlq',
      'r-1',
      'nope',
      { reason: str('invalid-json'), sourceMessageId: str('orig') },
      { SentTimestamp: '7' },
    );
    const file = join(dir, 'out.ndjson');
    const r = await exportTo([file]);
    expect(r).toEqual({
      code: 0,
      stdout: `exported 2 message(s) to ${file}; still in the queue\n`,
      stderr: '',
    });
    const [first, second] = lines(file);
    expect(first).toEqual({
      messageId: 'm-1',
      reason: 'none',
      sentAt: new Date(clock.now() - 1000).toISOString(),
      receiveCount: undefined,
      body: '{"id":"m-1"}',
      origin: { id: 'm-1', sentAt: clock.now() - 1000, sourceArn: queueArn('ingest') },
      attributes: {
        trace: { dataType: 'String', stringValue: 't-1' },
        blob: { dataType: 'Binary.gzip', binaryValue: 'AAH+/w==' },
      },
      systemAttributes: {
        SentTimestamp: String(clock.now() - 1000),
        DeadLetterQueueSourceArn: queueArn('ingest'),
      },
    });
    expect(second).toMatchObject({
      reason: 'invalid-json',
      origin: { id: 'orig' },
      attributes: { reason: { dataType: 'String', stringValue: 'invalid-json' } },
    });
    expect(sqs.messages('dlq')).toHaveLength(2);
    expect(sqs.destroyed).toBe(true);
  });

  it('exports only --reason, and purges exactly what it exported once confirmed', async () => {
    moved('m-1');
    sqs.add('dlq', 'r-1', 'nope', { reason: str('invalid-json') });
    const file = join(dir, 'none.ndjson');
    const r = await exportTo([file, '--reason', 'none', '--purge', '--yes']);
    expect(r.stdout).toBe(`exported 1 message(s) to ${file}; deleted from the queue\n`);
    expect(lines(file).map((l) => l.messageId)).toEqual(['m-1']);
    expect(sqs.messages('dlq').map((m) => m.MessageId)).toEqual(['r-1']);
  });

  it('does not purge unconfirmed: a pipe is a usage error, "n" a failure; nothing to purge asks nothing', async () => {
    moved('m-1');
    const piped = await exportTo([join(dir, 'a.ndjson'), '--purge']);
    expect(piped).toEqual({
      code: 64,
      stdout: `exported 1 message(s) to ${join(dir, 'a.ndjson')}; still in the queue\n`,
      stderr:
        's3-ingest dlq export: refusing to delete messages without confirmation: run on a terminal, or pass --yes\n',
    });
    const declined = await exportTo([join(dir, 'b.ndjson'), '--purge'], { terminalAnswer: 'n' });
    expect(declined.code).toBe(1);
    expect(declined.stderr).toBe(
      `Wrote 1 message(s) to ${join(dir, 'b.ndjson')}. Delete them from ${queueUrl('dlq')}? [y/N] s3-ingest dlq export: nothing changed\n`,
    );
    expect(sqs.messages('dlq')).toHaveLength(1);
    const none = await exportTo([join(dir, 'c.ndjson'), '--purge', '--reason', 'schema'], {
      terminalAnswer: 'y',
    });
    expect(none).toEqual({
      code: 0,
      stdout: `exported 0 message(s) to ${join(dir, 'c.ndjson')}; still in the queue\n`,
      stderr: '',
    });
    const confirmed = await exportTo([join(dir, 'd.ndjson'), '--purge'], { terminalAnswer: 'y' });
    expect(confirmed.code).toBe(0);
    expect(sqs.messages('dlq')).toHaveLength(0);
  });

  it('holds messages hidden long enough to answer the purge question (600 s), 60 s otherwise', async () => {
    moved('m-1');
    await exportTo([join(dir, 'a.ndjson')]);
    await exportTo([join(dir, 'b.ndjson'), '--purge', '--yes']);
    expect(sqs.callsOf('ReceiveMessageCommand').map((c) => c.VisibilityTimeout)).toEqual([60, 60, 600, 600]);
  });

  it('never overwrites a file: ExportFileExistsError, nothing received; other open errors as they are', async () => {
    const file = join(dir, 'earlier.ndjson');
    writeFileSync(file, 'evidence\n');
    await expect(exportTo([file])).rejects.toMatchObject({
      name: 'ExportFileExistsError',
      message: `${file} exists; export to a new file (an earlier export may be the only copy of purged messages)`,
      file,
    });
    expect(readFileSync(file, 'utf8')).toBe('evidence\n');
    await expect(exportTo([join(dir, 'missing', 'x.ndjson')])).rejects.toMatchObject({ code: 'ENOENT' });
    expect(sqs.calls).toEqual([]);
  });

  it('writes each message once however long the export runs', async () => {
    for (let i = 0; i < 35; i++) moved(`m-${i}`);
    sqs.receiveTakesMs = 40_000;
    const file = join(dir, 'slow.ndjson');
    expect((await exportTo([file])).code).toBe(0);
    expect(lines(file)).toHaveLength(35);
    expect(sqs.receivesOf('dlq').every((n) => n === 1)).toBe(true);
  });

  it.each([[[]], [['a.ndjson', 'b.ndjson']]])('refuses %j (one FILE) as a usage error', async (files) => {
    const r = await exportTo(files);
    expect(r).toEqual({ code: 64, stdout: '', stderr: `${DLQ_EXPORT_HELP}\n` });
    const noQueue = await runCommand((a, io) => dlqExportCommand(a, io, { clock }), [join(dir, 'q.ndjson')]);
    expect(noQueue.code).toBe(64);
    expect(await exportTo(['--help'])).toEqual({ code: 0, stdout: `${DLQ_EXPORT_HELP}\n`, stderr: '' });
  });
});

describe('dlq import', () => {
  async function exported(): Promise<string> {
    const file = join(dir, `export-${Math.random()}.ndjson`);
    await exportTo([file]);
    return file;
  }

  it("sends each line from --to with its producer's attributes (types and binaries) and its origin's", async () => {
    moved('m-1');
    const file = await exported();
    const r = await importFrom([file, '--to', queueUrl('ingest')]);
    expect(r).toEqual({
      code: 0,
      stdout: `sent 1 message(s) to ${queueUrl('ingest')}; 0 left\n`,
      stderr: '',
    });
    expect(sqs.messages('ingest')).toEqual([
      expect.objectContaining({
        Body: '{"id":"m-1"}',
        MessageAttributes: {
          trace: str('t-1'),
          blob: { DataType: 'Binary.gzip', BinaryValue: Buffer.from([0, 1, 254, 255]) },
          's3-ingest-origin': str('m-1'),
          's3-ingest-origin-sent': { DataType: 'Number', StringValue: String(clock.now() - 1000) },
        },
      }),
    ]);
    expect(sqs.messages('dlq')).toHaveLength(1);
    expect(sqs.destroyed).toBe(true);
  });

  it('leaves lines from other queues, unknown sources, contract rejections, past the horizon; says so', async () => {
    moved('mine');
    moved('theirs', '{}', 'other');
    moved('old', '{}', 'ingest', 30 * 86_400_000);
    sqs.add('dlq', 'nowhere', '{}', {}, { SentTimestamp: String(clock.now()) });
    sqs.add('dlq', 'bad', 'x', {
      reason: str('invalid-json'),
      sourceQueueArn: str(queueArn('ingest')),
      's3-ingest-origin-sent': { DataType: 'Number', StringValue: String(clock.now()) },
    });
    const file = await exported();
    const r = await importFrom([file, '--to', queueUrl('ingest'), '--json']);
    expect(JSON.parse(r.stdout)).toEqual({
      moved: 1,
      refused: 0,
      skipped: {
        'other-source': 1,
        'past-tombstone-horizon': 1,
        'unknown-source': 1,
        'contract-rejection': 1,
      },
      left: 4,
    });
    const all = await importFrom([
      file,
      '--to',
      queueUrl('ingest'),
      '--include-rejected',
      '--tombstone-days',
      '31',
    ]);
    expect(all.stdout).toBe(
      `sent 3 message(s) to ${queueUrl('ingest')}; 1 from an unknown source queue left; 1 from another queue than --to left; 2 left\n`,
    );
    expect(
      JSON.parse((await importFrom([file, '--to', queueUrl('ingest'), '--past-horizon', '--json'])).stdout),
    ).toMatchObject({ moved: 2 });
  });

  it('paces sends on the clock and exits 1 when the queue refuses any', async () => {
    for (let i = 0; i < 5; i++) moved(`m-${i}`);
    const file = await exported();
    sqs.fateOf = (e) => (e.MessageBody === '{"id":"m-4"}' ? 'failed' : 'ok');
    const r = await importFrom([file, '--to', queueUrl('ingest'), '--rate', '2']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('not sent: m-4: Refused: no\n');
    expect(r.stdout).toBe(
      `sent 4 message(s) to ${queueUrl('ingest')}; 1 refused by ${queueUrl('ingest')}; 1 left\n`,
    );
    expect(clock.sleeps).toEqual([1000, 1000]);
  });

  it('checks the whole file before sending anything', async () => {
    moved('m-1');
    const good = readFileSync(await exported(), 'utf8');
    const cases: [string, string][] = [
      ['{', 'not JSON'],
      ['[1]', 'not an export line (messageId and body are required)'],
      ['{"messageId":"x"}', 'not an export line (messageId and body are required)'],
      [
        '{"messageId":"x","body":"b","attributes":{"a":{"stringValue":"v"}}}',
        'a: an attribute needs a dataType',
      ],
      [
        '{"messageId":"x","body":"b","attributes":{"a":{"dataType":"String"}}}',
        'a: an attribute needs a stringValue or a binaryValue',
      ],
    ];
    for (const [line, why] of cases) {
      const file = join(dir, `bad-${Math.random()}.ndjson`);
      writeFileSync(file, `${good}\n${line}\n`);
      await expect(importFrom([file, '--to', queueUrl('ingest')])).rejects.toMatchObject({
        name: 'ImportFileError',
        message: expect.stringContaining(`${file}:3: ${why}`),
      });
    }
    expect(sqs.callsOf('SendMessageBatchCommand')).toEqual([]);
  });

  it('reads lines without attributes, and ignores blank lines and non-text system attributes', async () => {
    const file = join(dir, 'hand.ndjson');
    writeFileSync(
      file,
      `\n  \n${JSON.stringify({ messageId: 'h', body: 'b', systemAttributes: { SentTimestamp: String(clock.now()), DeadLetterQueueSourceArn: queueArn('ingest'), n: 1 } })}\n\n`,
    );
    const r = await importFrom([file, '--to', queueUrl('ingest')]);
    expect(r.stdout).toBe(`sent 1 message(s) to ${queueUrl('ingest')}; 0 left\n`);
    expect(sqs.messages('ingest')[0]?.MessageAttributes).toEqual({
      's3-ingest-origin': str('h'),
      's3-ingest-origin-sent': { DataType: 'Number', StringValue: String(clock.now()) },
    });
  });

  it.each([
    [[]],
    [['f.ndjson']],
    [['f.ndjson', 'g.ndjson', '--to', 'u']],
    [['f.ndjson', '--to', 'u', '--rate', '0']],
    [['f.ndjson', '--to', 'u', '--tombstone-days', 'x']],
  ])('refuses %j as a usage error', async (argv) => {
    expect(await importFrom(argv)).toEqual({ code: 64, stdout: '', stderr: `${DLQ_IMPORT_HELP}\n` });
  });

  it('prints its help', async () => {
    expect(await importFrom(['--help'])).toEqual({ code: 0, stdout: `${DLQ_IMPORT_HELP}\n`, stderr: '' });
  });
});
