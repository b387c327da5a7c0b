import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { SQSClient } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import type { CliIo } from '../../../lib/cli/io.js';
import { SERVE_READY } from '../../../lib/cli/local-serve.js';
import { main } from '../../../lib/cli/main.js';
import { Producer } from '../../../lib/index.js';
import { testTempDir } from '../../support/temp-dir.js';
import { exportedEnv, watchOutput } from './serve-output.js';

let child: ChildProcess | undefined;
afterEach(() => {
  if (child?.exitCode === null) child.kill('SIGKILL');
});

/** The printed command line for `command`. */
function printedLine(output: string, command: string): string {
  const line = output.split('\n').find((l) => new RegExp(`s3-ingest (-- )?${command} `).test(l));
  if (line === undefined) throw new Error(`no "${command}" command line in:\n${output}`);
  return line.trim();
}

/** The arguments of the printed command line for `command` (what follows the CLI's own name). */
function printedArgs(output: string, command: string): string[] {
  const words = printedLine(output, command).split(/\s+/);
  const afterName = words.findIndex((w) => w === 's3-ingest') + 1;
  return words.slice(words[afterName] === '--' ? afterName + 1 : afterName);
}

async function run(args: string[], env: Record<string, string>) {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIo = {
    stdout: { write: (t: string) => out.push(t) },
    stderr: { write: (t: string) => err.push(t), isTTY: false },
    env,
  };
  const code = await main(args, io);
  return { code, stdout: out.join(''), stderr: err.join('') };
}

function portIsClosed(endpoint: string): Promise<boolean> {
  const { hostname, port } = new URL(endpoint);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port) });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

describe('s3-ingest local --serve', () => {
  it('keeps the pipeline up for your own NDJSON: printed send/inspect/dlq lines work, one line per invocation, SIGINT stops cleanly', async () => {
    // One process (node --import tsx), so the signal reaches the command itself as Ctrl-C would.
    child = spawn(process.execPath, ['--import', 'tsx', 'lib/cli/main.ts', 'local', '--serve'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const watched = watchOutput(child);
    const banner = await watched.waitFor(new RegExp(`${SERVE_READY} \\S+\\n`));
    const env = exportedEnv(banner);
    expect(Object.keys(env).sort()).toEqual(
      [
        'AWS_ACCESS_KEY_ID',
        'AWS_ENDPOINT_URL_DYNAMODB',
        'AWS_ENDPOINT_URL_S3',
        'AWS_ENDPOINT_URL_SQS',
        'AWS_REGION',
        'AWS_SECRET_ACCESS_KEY',
        'BUCKET_NAME',
        'DLQ_URL',
        'QUEUE_URL',
        'RESOURCES',
        'SEMAPHORE_TABLE',
      ].sort(),
    );
    // In the source tree the lines run the CLI through its npm script: on the project's Node, whatever
    // `node` the user's shell finds first.
    expect(printedLine(banner, 'inspect')).toMatch(/^npm run -s s3-ingest -- inspect /);
    // No demo load: nothing was invoked before we sent anything.
    expect(banner).not.toMatch(/^invocation /m);

    // Two sends: a record, then an explicit-id insert of other content on it, which the handler dead-letters
    // (record-exists). (An update of a missing record would be kept pending, not dead-lettered: issue 15.)
    const sends = testTempDir('serve-sends');
    let sendCount = 0;
    const sendLine = async (write: object) => {
      sendCount += 1;
      const file = join(sends, `${sendCount}.ndjson`);
      writeFileSync(file, JSON.stringify(write));
      const sendArgs = printedArgs(banner, 'send').map((a) => (a === 'writes.ndjson' ? file : a));
      const sent = await run(sendArgs, env);
      expect(sent.code, sent.stderr).toBe(0);
    };
    // The README's producer example: a plain SDK v3 client configured only by the exported environment.
    const saved = { ...process.env };
    Object.assign(process.env, env);
    const plain = new SQSClient({});
    try {
      const producer = new Producer({ queueUrl: env.QUEUE_URL!, client: plain });
      const [sent] = await producer.sendMany([
        { tenant: 'acme', resource: 'orders', op: 'upsert', id: 'o-0', data: { total: 1 } },
      ]);
      expect(sent?.error).toBeUndefined();
    } finally {
      process.env = saved;
      plain.destroy();
    }
    // One line per invocation, streamed as they happen: wait until each record has an outcome.
    await watched.waitFor(/written 1 \|/);
    await sendLine({ tenant: 'acme', resource: 'orders', op: 'upsert', id: 'o-1', data: { total: 3 } });
    await watched.waitFor(/written 1 \|[\s\S]*written 1 \|/);
    await sendLine({ tenant: 'acme', resource: 'orders', op: 'insert', id: 'o-1', data: { total: 4 } });
    await watched.waitFor(/dead-lettered 1 \(record-exists 1\)/);
    expect(watched.output()).toMatch(/^invocation 1: \d+ records, \d+ acknowledged, 0 to redeliver, \d+ ms/m);

    // The printed inspect line, pasted into a shell after the export line, as a user would.
    const shell = spawnSync('bash', ['-c', `${printedLine(banner, 'inspect')} --json`], {
      env: { ...process.env, ...env },
      encoding: 'utf8',
    });
    expect(shell.status, shell.stderr).toBe(0);
    const counts = JSON.parse(shell.stdout) as {
      bucket: { byTenant: Record<string, Record<string, number>> };
    };
    expect(counts.bucket.byTenant).toEqual({ acme: { orders: 2 } });
    const peeked = await run([...printedArgs(banner, 'dlq'), '--json'], env);
    expect(peeked.code, peeked.stderr).toBe(0);
    expect(JSON.parse(peeked.stdout)).toMatchObject({ byReason: { 'record-exists': 1 } });

    const stopped = watched.waitFor(/stopped: /);
    child.kill('SIGINT');
    const [code] = await once(child, 'exit');
    await stopped;
    expect(code).toBe(0);
    for (const endpoint of [
      env.AWS_ENDPOINT_URL_S3!,
      env.AWS_ENDPOINT_URL_SQS!,
      env.AWS_ENDPOINT_URL_DYNAMODB!,
    ])
      expect(await portIsClosed(endpoint), endpoint).toBe(true);
  }, 60_000);

  it('stops cleanly on SIGTERM too (exit 0, every port closed)', async () => {
    child = spawn(process.execPath, ['--import', 'tsx', 'lib/cli/main.ts', 'local', '--serve'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const watched = watchOutput(child);
    const env = exportedEnv(await watched.waitFor(new RegExp(`${SERVE_READY} \\S+\\n`)));
    const stopped = watched.waitFor(/stopping \(SIGTERM\)[\s\S]*stopped: 0 invocations/);
    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    await stopped;
    expect(code).toBe(0);
    for (const endpoint of [env.AWS_ENDPOINT_URL_S3!, env.AWS_ENDPOINT_URL_DYNAMODB!])
      expect(await portIsClosed(endpoint), endpoint).toBe(true);
  }, 30_000);
});
