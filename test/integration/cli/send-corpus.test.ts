import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateQueueCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import { countQueue, queueDepth } from '../../../lib/cli/inspect.js';
import { main } from '../../../lib/cli/main.js';
import { loadBadMessages, loadGoodMessages } from '../../fixtures/messages.js';
import { localClientConfig } from '../../support/local-aws.js';
import { captureIo } from './capture-io.js';

const bad = loadBadMessages();
const good = loadGoodMessages();
const sqs = new SQSClient(localClientConfig('sqs'));
const dir = mkdtempSync(join(tmpdir(), 's3-ingest-send-corpus-'));
afterAll(() => {
  sqs.destroy();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * Corpus entries an NDJSON line cannot carry as the handler sees them: an empty body is a blank line (the
 * CLI skips blank lines by design), and `v` is optional on the command line (the producer adds `v: 1`), so a
 * body whose only fault is a missing `v` is a valid CLI line. Both are asserted below, not silently dropped.
 */
const NOT_A_LINE = new Set(['empty body', 'missing v']);

function cliIo() {
  return captureIo({ RESOURCES: JSON.stringify(Object.fromEntries([...bad.resources].map((r) => [r, {}]))) });
}

describe('s3-ingest send over the whole hostile corpus', () => {
  const lineable = bad.messages.filter((m) => !NOT_A_LINE.has(m.name));
  // Single-line good bodies between the bad ones: they must pass validation and still not be sent.
  const goodLines = good.messages.filter((m) => !/[\r\n]/.test(m.body));

  it('every corpus body fits on one line, except the two documented ones', () => {
    expect(lineable.length).toBe(bad.messages.length - NOT_A_LINE.size);
    expect(bad.messages.filter((m) => NOT_A_LINE.has(m.name)).map((m) => m.name)).toEqual(
      expect.arrayContaining([...NOT_A_LINE]),
    );
    for (const m of lineable) expect(m.body, m.name).not.toMatch(/[\r\n]/);
    expect(goodLines.length).toBeGreaterThanOrEqual(10);
  });

  it('exits 2, reports every bad line with its reason, and the queue stays empty', async () => {
    const { QueueUrl: queueUrl } = await sqs.send(
      new CreateQueueCommand({ QueueName: `send-corpus-${randomUUID().slice(0, 8)}` }),
    );
    const lines: string[] = [];
    const expected = new Map<number, string>();
    lineable.forEach((m, i) => {
      const good = goodLines[i % goodLines.length]!;
      lines.push(good.body);
      lines.push(m.body);
      expected.set(lines.length, m.reason);
    });
    lines.push(goodLines[0]!.body);
    const file = join(dir, 'corpus.ndjson');
    writeFileSync(file, `${lines.join('\n')}\n`);

    const run = cliIo();
    const code = await main(['send', '--queue-url', queueUrl!, file], run.value);
    const stderr = run.stderr();
    expect(code).toBe(2);

    const reported = new Map<number, string>();
    for (const match of stderr.matchAll(/^line (\d+): ([a-z-]+): /gm)) {
      const line = Number(match[1]);
      expect(reported.has(line), `line ${line} reported twice`).toBe(false);
      reported.set(line, match[2]!);
    }
    // Exactly the bad lines, each with the reason the handler would dead-letter it with.
    expect(Object.fromEntries(reported)).toEqual(Object.fromEntries(expected));
    expect(stderr).toContain(`${expected.size} bad line(s); nothing sent`);
    expect(run.stdout()).toBe('');

    expect(queueDepth(await countQueue(sqs, queueUrl!))).toBe(0);
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl!, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
    );
    expect(Messages).toEqual([]);
  });

  it('the two bodies an NDJSON line cannot carry behave as documented', async () => {
    const missingV = bad.messages.find((m) => m.name === 'missing v')!;
    const { QueueUrl: queueUrl } = await sqs.send(
      new CreateQueueCommand({ QueueName: `send-corpus-${randomUUID().slice(0, 8)}` }),
    );
    const file = join(dir, 'edge.ndjson');
    // The empty body is a blank line (skipped); the body without `v` is a valid command-line write.
    writeFileSync(file, `\n${missingV.body}\n`);
    const run = cliIo();
    const code = await main(['send', '--queue-url', queueUrl!, '--json', file], run.value);
    expect(run.stderr()).toBe('');
    expect(code).toBe(0);
    expect(JSON.parse(run.stdout())).toEqual({ sent: 1, failed: 0, rejected: [] });
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl!, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    expect(Messages.map((m) => (JSON.parse(m.Body!) as { v: unknown }).v)).toEqual([1]);
  });
});
