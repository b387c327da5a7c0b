import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import type { CliIo } from '../../../lib/cli/io.js';
import { main } from '../../../lib/cli/main.js';
import { localAwsEndpoints, localClientConfig } from '../../support/local-aws.js';

const sqs = new SQSClient(localClientConfig('sqs'));
const s3 = new S3Client(localClientConfig('s3'));
afterAll(() => {
  sqs.destroy();
  s3.destroy();
});

function io(stdinText?: string, extraEnv: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const value: CliIo = {
    stdout: { write: (t: string) => out.push(t) },
    stderr: { write: (t: string) => err.push(t), isTTY: false },
    env: {
      AWS_ENDPOINT_URL_SQS: localAwsEndpoints().sqs,
      AWS_ENDPOINT_URL_S3: localAwsEndpoints().s3,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      ...extraEnv,
    },
    ...(stdinText === undefined ? {} : { stdin: [stdinText] }),
  };
  return { value, stdout: () => out.join(''), stderr: () => err.join('') };
}

async function newQueue(): Promise<string> {
  const res = await sqs.send(new CreateQueueCommand({ QueueName: `cli-${randomUUID().slice(0, 8)}` }));
  return res.QueueUrl!;
}

async function visible(queueUrl: string): Promise<number> {
  const res = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
  );
  return Number(res.Attributes?.ApproximateNumberOfMessages);
}

const good = [
  { tenant: 'acme', resource: 'orders', op: 'upsert', id: 'o-1', data: { total: 5 } },
  { v: 1, tenant: 'acme', resource: 'orders', op: 'delete', id: 'o-2' },
  { tenant: 'globex', resource: 'orders', op: 'insert', key: 'k-1', data: { total: 7 } },
].map((w) => JSON.stringify(w));

describe('s3-ingest send', () => {
  it('refuses the whole input with exit 2, naming each bad line and reason, and sends nothing', async () => {
    const queueUrl = await newQueue();
    const lines = [
      good[0],
      '{"tenant":"acme","resource":"orders","op":"upsert","id":"o-3",', // bad JSON
      JSON.stringify({ tenant: '../etc', resource: 'orders', op: 'upsert', id: 'x', data: {} }),
      JSON.stringify({ tenant: 'acme', resource: 'invoices', op: 'upsert', id: 'x', data: {} }),
      '{"tenant":"acme","resource":"orders","op":"upsert","id":"p","data":{"__proto__":{"x":1}}}',
      '',
      good[1],
    ].join('\n');
    const run = io(lines, { RESOURCES: JSON.stringify({ orders: {} }) });
    const code = await main(['send', '--queue-url', queueUrl, '-'], run.value);
    expect(code).toBe(2);
    const stderr = run.stderr();
    expect(stderr).toMatch(/^line 2: invalid-json: /m);
    expect(stderr).toMatch(/^line 3: invalid-tenant: /m);
    expect(stderr).toMatch(/^line 4: unknown-resource: /m);
    expect(stderr).toMatch(/^line 5: forbidden-key: /m);
    expect(stderr).not.toMatch(/^line [167]:/m);
    expect(await visible(queueUrl)).toBe(0);
  });

  it('sends valid NDJSON and reports per-write results', async () => {
    const queueUrl = await newQueue();
    const run = io(`${good.join('\n')}\n`);
    const code = await main(['send', '--queue-url', queueUrl, '--json'], run.value);
    expect(run.stderr()).toBe('');
    expect(code).toBe(0);
    expect(JSON.parse(run.stdout())).toEqual({ sent: 3, failed: 0, rejected: [] });
    const received = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10 }),
    );
    const bodies = (received.Messages ?? []).map((m) => JSON.parse(m.Body!));
    expect(bodies).toHaveLength(3);
    expect(bodies.every((b) => b.v === 1)).toBe(true);
    expect(bodies.map((b) => b.tenant).sort()).toEqual(['acme', 'acme', 'globex']);
  });

  it('is a usage error without --queue-url', async () => {
    const run = io('');
    expect(await main(['send'], run.value)).toBe(64);
    expect(run.stderr()).toMatch(/--queue-url URL/);
  });
});

describe('s3-ingest inspect', () => {
  it('counts records per tenant/resource and messages in queue and DLQ', async () => {
    const bucket = `cli-${randomUUID().slice(0, 8)}`;
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    const keys = [
      't=acme/r=orders/id=1.json',
      't=acme/r=orders/id=2.json',
      't=acme/r=users/id=1.json',
      'README',
    ];
    for (const Key of keys) await s3.send(new PutObjectCommand({ Bucket: bucket, Key, Body: '{}' }));
    const queueUrl = await newQueue();
    const dlqUrl = await newQueue();
    await main(['send', '--queue-url', queueUrl], io(good[0]).value);
    const run = io();
    const code = await main(
      ['inspect', '--bucket', bucket, '--queue-url', queueUrl, '--dlq-url', dlqUrl, '--json'],
      run.value,
    );
    expect(code).toBe(0);
    expect(JSON.parse(run.stdout())).toEqual({
      bucket: { total: 3, other: 1, byTenant: { acme: { orders: 2, users: 1 } } },
      queue: { visible: 1, inFlight: 0, delayed: 0 },
      dlq: { visible: 0, inFlight: 0, delayed: 0 },
    });
  });
});

describe('bin/s3-ingest.js', () => {
  it('prints help through the tsx launcher', () => {
    const res = spawnSync(process.execPath, ['bin/s3-ingest.js', 'inspect', '--help'], { encoding: 'utf8' });
    expect(res.status).toBe(0);
    expect(res.stdout).toMatch(/^Usage: s3-ingest inspect/);
  });

  it('rejects an unknown command with a usage exit code', async () => {
    const run = io();
    expect(await main(['frobnicate'], run.value)).toBe(64);
    expect(run.stderr()).toMatch(/unknown command "frobnicate"/);
  });
});
