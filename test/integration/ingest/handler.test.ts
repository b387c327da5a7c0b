import { randomUUID } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../../lib/ingest/config.js';
import { createIngestHandler, type InvocationSummary } from '../../../lib/ingest/handler/ingest-handler.js';
import { type LocalResources, provisionLocal } from '../../../lib/local/emulators/provision.js';
import { EventSourceRunner, type InvocationResult } from '../../../lib/local/lambda/event-source-runner.js';
import { LambdaContainers } from '../../../lib/local/lambda/lambda-containers.js';
import { type ChaosProxy, startChaosProxy } from '../../../lib/local/s3-behaviour/chaos-proxy.js';
import { loadBadMessages, loadGoodMessages } from '../../fixtures/messages.js';
import { localAwsEndpoints, localClientConfig } from '../../support/local-aws.js';
import { body, keyOf, quietMetrics, silentLogger } from '../../unit/ingest/handler/support.js';
import { expectDeadLetteredBody, readDlq } from './dlq.js';

const sqs = new SQSClient(localClientConfig('sqs'));
const s3 = new S3Client(localClientConfig('s3'));
const cleanups: (() => Promise<unknown>)[] = [];

// The handler builds its own SDK clients, as in Lambda: credentials come from the environment.
beforeAll(() => {
  vi.stubEnv('AWS_ACCESS_KEY_ID', 'test');
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'test');
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(() => {
  vi.unstubAllEnvs();
  sqs.destroy();
  s3.destroy();
});

interface Pipeline {
  readonly resources: LocalResources;
  readonly runner: EventSourceRunner;
  readonly containers: LambdaContainers;
  readonly invocations: InvocationResult[];
  readonly summaries: InvocationSummary[];
}

/**
 * A provisioned stack (bucket, queue + DLQ with redrive, semaphore table), the runner invoking the real
 * handler through Lambda-like containers, S3 optionally behind the chaos proxy.
 */
async function pipeline(options: {
  env?: Record<string, string>;
  s3Endpoint?: string;
  maxReceiveCount?: number;
  maxConcurrency?: number;
  functionTimeoutMs?: number;
}): Promise<Pipeline> {
  const name = `hi-${randomUUID().slice(0, 8)}`;
  const functionTimeoutMs = options.functionTimeoutMs ?? 3_000;
  const visibility = Math.ceil(functionTimeoutMs / 1000);
  const resources = await provisionLocal({
    endpoints: localAwsEndpoints(),
    bucket: name,
    queueName: `${name}-ingest`,
    tableName: `${name}-semaphore`,
    maxReceiveCount: options.maxReceiveCount ?? 5,
    visibilityTimeoutSeconds: visibility,
  });
  const endpoints = localAwsEndpoints();
  const config = loadConfig({
    BUCKET_NAME: resources.bucket,
    DLQ_URL: resources.dlqUrl,
    SEMAPHORE_TABLE: resources.tableName,
    RESOURCES: JSON.stringify({ orders: {}, customers: {} }),
    AWS_REGION: 'us-east-1',
    AWS_ENDPOINT_URL_S3: options.s3Endpoint ?? endpoints.s3,
    AWS_ENDPOINT_URL_SQS: endpoints.sqs,
    AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
    DEADLINE_MARGIN_MS: '1000',
    WRITE_TIMEOUT_MS: '1000',
    ...options.env,
  });
  const summaries: InvocationSummary[] = [];
  const containers = new LambdaContainers(() =>
    createIngestHandler(config, {
      logger: process.env.HANDLER_TEST_LOGS ? new Logger({ logLevel: 'WARN' }) : silentLogger(),
      metrics: quietMetrics(),
      onInvocation: (s) => summaries.push(s),
    }),
  );
  const runner = new EventSourceRunner({
    client: sqs,
    queueUrl: resources.queueUrl,
    handler: containers.invoke,
    batchSize: 10,
    maxConcurrency: options.maxConcurrency ?? 2,
    visibilityTimeoutSeconds: visibility,
    functionTimeoutMs,
    waitTimeSeconds: 1,
  });
  const invocations: InvocationResult[] = [];
  runner.on('invocation', (r) => invocations.push(r));
  cleanups.push(async () => {
    await runner.stop();
    await containers.close();
  });
  return { resources, runner, containers, invocations, summaries };
}

/**
 * Deferred copies sent so far: a deferral deletes the message it copies, so a run is over when the runner has
 * deleted every message sent plus every copy (a copy's write is still ahead when its original is deleted).
 */
function deferredCopies(p: { summaries: readonly InvocationSummary[] }): number {
  return p.summaries.reduce((sum, s) => sum + s.RecordsDeferred, 0);
}

/** Sends bodies in batches of 10; resolves to the SQS message id of each accepted body (undefined: refused). */
async function send(queueUrl: string, bodies: readonly string[]): Promise<(string | undefined)[]> {
  const out: (string | undefined)[] = [];
  for (let i = 0; i < bodies.length; i += 10) {
    const entries = bodies.slice(i, i + 10).map((MessageBody, j) => ({ Id: String(j), MessageBody }));
    const res = await sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }));
    const byId = new Map((res.Successful ?? []).map((s) => [s.Id, s.MessageId]));
    for (const e of entries) out.push(byId.get(e.Id));
  }
  return out;
}

async function listBucket(bucket: string): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }));
    for (const o of page.Contents ?? []) keys.push(o.Key!);
    token = page.NextContinuationToken;
  } while (token !== undefined);
  return keys.sort();
}

async function readRecord(bucket: string, key: string): Promise<Record<string, unknown>> {
  const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return JSON.parse(await object.Body!.transformToString()) as Record<string, unknown>;
}

describe('ingest handler through the event-source runner on the emulators', () => {
  it('writes good records in per-record order, dead-letters the hostile corpus with reasons, stays in t=<tenant>/', async () => {
    const p = await pipeline({ maxConcurrency: 1 });
    // One SendMessageBatch per record sequence shares one SentTimestamp: `seq` orders its writes, as the
    // Producer sets it.
    const sequence = (id: string) => [
      body({ op: 'insert', id, data: { step: 1, first: true }, seq: 1 }),
      body({ op: 'update', id, data: { step: 2 }, seq: 2 }),
      body({ op: 'update', id, data: { step: 3 }, seq: 3 }),
      body({ op: 'delete', id, seq: 4 }),
      body({ op: 'upsert', id, data: { step: 5 }, seq: 5 }),
      body({ op: 'update', id, data: { final: true }, seq: 6 }),
    ];
    const ordered = await send(p.resources.queueUrl, [
      ...sequence('seq-1'),
      ...sequence('seq-2').slice(0, 4),
    ]);
    const good = loadGoodMessages().messages.map((m) => m.body);
    const bad = loadBadMessages().messages.filter((m) => Buffer.byteLength(m.body) < 1_000_000);
    const goodIds = await send(p.resources.queueUrl, good);
    const badIds = await send(
      p.resources.queueUrl,
      bad.map((m) => m.body),
    );
    const sent = [...ordered, ...goodIds, ...badIds].filter((id) => id !== undefined).length;
    expect(ordered.every((id) => id !== undefined)).toBe(true);
    // fauxqs refuses a few bodies SQS would refuse too (characters outside its allowed set): never delivered.
    expect(goodIds.filter((id) => id !== undefined).length).toBeGreaterThan(8);

    await p.runner.start();
    const stats = await p.runner.until((s) => s.deleted >= sent + deferredCopies(p), { timeoutMs: 25_000 });
    expect(stats.failedItems).toBe(0);

    const letters = await readDlq(sqs, p.resources.dlqUrl);
    let checked = 0;
    bad.forEach((m, i) => {
      const id = badIds[i];
      if (id === undefined) return; // SQS itself refused the body (invalid characters): never delivered
      checked++;
      expect(letters.get(id)?.attributes.reason, m.name).toBe(m.reason);
      expectDeadLetteredBody(letters.get(id), m.body, m.name);
    });
    expect(checked).toBeGreaterThan(100);
    expect(letters.size).toBe(checked);

    expect(await readRecord(p.resources.bucket, keyOf('acme', 'orders', 'seq-1'))).toMatchObject({
      step: 5,
      final: true,
      version: 6,
    });
    expect(await readRecord(p.resources.bucket, keyOf('acme', 'orders', 'seq-1'))).not.toHaveProperty(
      'first',
    );
    const keys = await listBucket(p.resources.bucket);
    // insert, update, update, delete: a tombstone remains (so an older write cannot resurrect the record).
    expect(await readRecord(p.resources.bucket, keyOf('acme', 'orders', 'seq-2'))).toMatchObject({
      $seq: { h: 1, b: [4, expect.any(String)] },
    });
    const tenants = new Set(good.map((b) => (JSON.parse(b) as { tenant: string }).tenant));
    tenants.add('acme');
    expect(keys.length).toBeGreaterThan(3);
    for (const key of keys) {
      const tenant = /^t=([a-z0-9][a-z0-9_-]{0,62})\/r=(orders|customers)\/id=[^/]+\.json$/.exec(key)?.[1];
      expect(tenant !== undefined && tenants.has(tenant), key).toBe(true);
    }
    // Large tenants booked their prefixes' slots in the budget table on dynalite.
    expect(Math.max(...p.summaries.map((s) => s.BookedWriteRate))).toBeGreaterThan(0);
  });

  it('redelivers transient S3 failures until everything is written once (chaos proxy, no in-call retries)', async () => {
    const proxy: ChaosProxy = await startChaosProxy({
      target: localAwsEndpoints().s3,
      model: { writesPerSecond: Infinity, faults: { internalErrorRate: 0.15 }, seed: 7 },
    });
    cleanups.push(() => proxy.stop());
    const p = await pipeline({
      s3Endpoint: proxy.endpoint,
      env: { WRITE_RETRIES: '0' },
      maxReceiveCount: 20,
      functionTimeoutMs: 2_000,
    });
    const bodies = ['acme', 'globex', 'initech'].flatMap((tenant) =>
      Array.from({ length: 10 }, (_, i) =>
        i % 2 === 0
          ? body({ tenant, op: 'upsert', id: `u-${i}`, data: { i } })
          : body({ tenant, op: 'insert', data: { i } }),
      ),
    );
    const ids = await send(p.resources.queueUrl, bodies);
    await p.runner.start();
    const stats = await p.runner.until((s) => s.deleted >= ids.length + deferredCopies(p), {
      timeoutMs: 20_000,
    });
    expect(stats.redelivered).toBeGreaterThan(0);
    expect(p.invocations.some((i) => i.outcome === 'partial')).toBe(true);
    expect(proxy.model.stats().total.internalErrors).toBeGreaterThan(0);
    const keys = await listBucket(p.resources.bucket);
    expect(keys).toHaveLength(30); // 15 upserts + 15 inserts with ids derived from their message ids
    expect((await readDlq(sqs, p.resources.dlqUrl)).size).toBe(0);
  });

  it('returns before the function timeout with every unfinished record listed when S3 stalls', async () => {
    const proxy = await startChaosProxy({
      target: localAwsEndpoints().s3,
      model: { writesPerSecond: Infinity, latency: { medianMs: 5_000, p99Ms: 5_000 } },
    });
    cleanups.push(() => proxy.stop());
    // Cutoff at ~2 s: the first attempts time out at 1 s, the retries are in flight when the margin is reached.
    const p = await pipeline({ s3Endpoint: proxy.endpoint, functionTimeoutMs: 3_000, maxConcurrency: 1 });
    const ids = await send(
      p.resources.queueUrl,
      Array.from({ length: 4 }, (_, i) => body({ id: `d-${i}` })),
    );
    await p.runner.start();
    await p.runner.until((s) => s.invocations >= 1, { timeoutMs: 10_000 });
    await p.runner.stop();
    const first = p.invocations[0]!;
    expect(first.failure).toBeUndefined(); // not a timeout: the handler answered
    expect(first.durationMs).toBeLessThan(3_000);
    expect([...first.failedMessageIds].sort()).toEqual([...first.messageIds].sort());
    expect(first.messageIds.every((id) => ids.includes(id))).toBe(true);
    expect(p.summaries[0]).toMatchObject({ deadlineReached: true, RecordsProcessed: 0 });
  });
});
