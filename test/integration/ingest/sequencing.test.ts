// Issue 15 end to end on the embedded stack (fauxqs SQS + S3, dynalite): old messages are redelivered by SQS
// after newer writes to the same records were acknowledged, and the bucket ends in exactly the state of
// applying every message once in `seq` order.
import { Logger } from '@aws-lambda-powertools/logger';
import { S3Client } from '@aws-sdk/client-s3';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import { Database } from '../../../lib/db/database.js';
import { RecordNotFoundError } from '../../../lib/db/errors.js';
import { S3ObjectStore } from '../../../lib/db/s3-object-store.js';
import { createIngestHandler } from '../../../lib/ingest/handler/ingest-handler.js';
import { provisionLocal } from '../../../lib/local/emulators/provision.js';
import { EventSourceRunner } from '../../../lib/local/lambda/event-source-runner.js';
import { LambdaContainers } from '../../../lib/local/lambda/lambda-containers.js';
import { localAwsEndpoints, localClientConfig } from '../../support/local-aws.js';
import { body, quietMetrics, silentLogger } from '../../unit/ingest/handler/support.js';
import { readDlq } from './dlq.js';
import { stackConfig, useTestCredentials } from './emulated-stack.js';

useTestCredentials();
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('sequenced writes on the embedded stack (issue 15)', () => {
  it('old messages redelivered after newer ones were acknowledged end in exactly the in-order state', async () => {
    const sqs = new SQSClient(localClientConfig('sqs'));
    const name = `seq-${Date.now().toString(36)}`;
    const resources = await provisionLocal({
      endpoints: localAwsEndpoints(),
      bucket: name,
      queueName: `${name}-ingest`,
      tableName: `${name}-semaphore`,
      maxReceiveCount: 10,
      visibilityTimeoutSeconds: 2,
    });
    const containers = new LambdaContainers(() =>
      createIngestHandler(stackConfig(resources, { WRITE_TIMEOUT_MS: '1000' }), {
        logger: process.env.HANDLER_TEST_LOGS ? new Logger({ logLevel: 'WARN' }) : silentLogger(),
        metrics: quietMetrics(),
      }),
    );
    // Old writes (seq < 100). The first time SQS delivers one, it is either held back (never applied:
    // "lost") or applied and then reported failed anyway ("applied"), as a timeout after the write would;
    // either way SQS redelivers it after the visibility timeout, once the newer writes were acknowledged.
    const old = [
      { id: 'up', op: 'upsert', data: { v: 1, old: true }, seq: 10, first: 'lost' },
      { id: 'up-2', op: 'upsert', data: { v: 1, old: true }, seq: 10, first: 'applied' },
      { id: 'gone', op: 'upsert', data: { v: 1 }, seq: 10, first: 'lost' },
      { id: 'gone-2', op: 'upsert', data: { v: 1 }, seq: 10, first: 'applied' },
      { id: 'merged', op: 'upsert', data: { a: 1, b: 1 }, seq: 10, first: 'lost' },
      { id: 'pending', op: 'upsert', data: { a: 1, b: 1 }, seq: 10, first: 'lost' },
      { id: 'late-update', op: 'update', data: { b: 3 }, seq: 30, first: 'applied' },
    ] as const;
    const newer = [
      { id: 'up', op: 'upsert', data: { v: 2 }, seq: 20 },
      { id: 'up-2', op: 'upsert', data: { v: 2 }, seq: 20 },
      { id: 'gone', op: 'delete', seq: 20 },
      { id: 'gone-2', op: 'delete', seq: 20 },
      { id: 'merged', op: 'update', data: { b: 2 }, seq: 20 },
      { id: 'pending', op: 'update', data: { b: 2 }, seq: 20 },
      { id: 'late-update', op: 'upsert', data: { a: 1, b: 1 }, seq: 20 },
    ] as const;
    const bodyOf = (w: { id: string; op: string; data?: object; seq: number }) =>
      body({ op: w.op as 'upsert', id: w.id, seq: w.seq, ...(w.data ? { data: { ...w.data } } : {}) });
    const oldBodies = new Map(old.map((w) => [bodyOf(w), w.first]));
    const firstSeen = new Set<string>();
    const redelivered = new Set<string>();
    const invoke = async (event: SQSEvent, context: Parameters<typeof containers.invoke>[1]) => {
      const held: string[] = [];
      const failAfter: string[] = [];
      const records = event.Records.filter((r) => {
        const first = oldBodies.get(r.body);
        if (first === undefined) return true;
        if (firstSeen.has(r.messageId)) {
          redelivered.add(r.messageId);
          return true;
        }
        firstSeen.add(r.messageId);
        if (first === 'lost') {
          held.push(r.messageId);
          return false;
        }
        failAfter.push(r.messageId);
        return true;
      });
      const response: SQSBatchResponse =
        records.length === 0
          ? { batchItemFailures: [] }
          : ((await containers.invoke({ Records: records }, context)) ?? { batchItemFailures: [] });
      return {
        batchItemFailures: [
          ...response.batchItemFailures,
          ...[...held, ...failAfter].map((itemIdentifier) => ({ itemIdentifier })),
        ],
      };
    };
    const runner = new EventSourceRunner({
      client: sqs,
      queueUrl: resources.queueUrl,
      handler: invoke,
      batchSize: 10,
      maxConcurrency: 2,
      visibilityTimeoutSeconds: 2,
      functionTimeoutMs: 2_000,
      waitTimeSeconds: 1,
    });
    cleanups.push(async () => {
      await runner.stop();
      await containers.close();
      sqs.destroy();
    });
    const send = (bodies: readonly string[]) =>
      sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: resources.queueUrl,
          Entries: bodies.map((MessageBody, i) => ({ Id: String(i), MessageBody })),
        }),
      );
    await send(old.map(bodyOf));
    await runner.start();
    // Every old message has had its first delivery before the newer ones are sent.
    await runner.until(() => firstSeen.size === old.length, { timeoutMs: 15_000 });
    await send(newer.map(bodyOf));
    const stats = await runner.until((s) => s.deleted >= old.length + newer.length, { timeoutMs: 30_000 });
    expect(redelivered.size).toBe(old.length);
    expect(stats.redelivered).toBeGreaterThanOrEqual(old.length);
    expect((await readDlq(sqs, resources.dlqUrl)).size).toBe(0);

    const s3 = new S3Client(localClientConfig('s3'));
    cleanups.push(async () => s3.destroy());
    const db = new Database({ tenant: 'acme', store: new S3ObjectStore(s3, resources.bucket) });
    const orders = await db.createResource({ name: 'orders' });
    const fields = async (id: string) => {
      try {
        const { id: _i, createdAt: _c, updatedAt: _u, version: _v, ...rest } = await orders.get(id);
        return rest;
      } catch (err) {
        if (err instanceof RecordNotFoundError) return undefined;
        throw err;
      }
    };
    // The state of applying each message once in seq order:
    expect(await fields('up')).toEqual({ v: 2 });
    expect(await fields('up-2')).toEqual({ v: 2 });
    expect(await fields('gone')).toBeUndefined();
    expect(await fields('gone-2')).toBeUndefined();
    expect(await fields('merged')).toEqual({ a: 1, b: 2 });
    expect(await fields('pending')).toEqual({ a: 1, b: 2 });
    expect(await fields('late-update')).toEqual({ a: 1, b: 3 });
    expect(await orders.count()).toBe(5);
    expect((await orders.list()).items.map((r) => r.id).sort()).toEqual(
      ['late-update', 'merged', 'pending', 'up', 'up-2'].sort(),
    );
  }, 60_000);
});
