import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { isTimeout } from '../../../lib/errors/classify.js';
import { loadConfig } from '../../../lib/ingest/config.js';
import { createAwsClients } from '../../../lib/ingest/handler/aws-clients.js';
import { createIngestHandler } from '../../../lib/ingest/handler/ingest-handler.js';
import type { LocalResources } from '../../../lib/local/emulators/provision.js';
import { DynamoRateBudget } from '../../../lib/semaphore/index.js';
import { localAwsEndpoints, localClientConfig } from '../../support/local-aws.js';
import {
  body,
  failedIds,
  lambdaContext,
  quietMetrics,
  silentLogger,
  sqsEvent,
} from '../../unit/ingest/handler/support.js';
import { type StallingProxy, startStallingProxy } from '../semaphore/support/stalling-proxy.js';
import { provisionFresh, stackConfig, useTestCredentials } from './emulated-stack.js';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
const s3 = new S3Client(localClientConfig('s3'));
const dynamodb = new DynamoDBClient(localClientConfig('dynamodb'));

useTestCredentials();
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(() => {
  s3.destroy();
  dynamodb.destroy();
});

const resources = () => provisionFresh('stall');

async function proxy(target: string | undefined, stall?: (body: string) => boolean): Promise<StallingProxy> {
  const p = await startStallingProxy({
    ...(target === undefined ? {} : { target }),
    ...(stall ? { stall } : {}),
  });
  cleanups.push(() => p.close());
  return p;
}

/** The handler as Lambda builds it, on these endpoints, with a 1 s margin before the Lambda timeout. */
function handlerOn(r: LocalResources, endpoints: { sqs: string; dynamodb: string }) {
  const logger = silentLogger();
  const warn = vi.spyOn(logger, 'warn');
  const handler = createIngestHandler(
    stackConfig(r, {
      AWS_ENDPOINT_URL_SQS: endpoints.sqs,
      AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
      WRITE_TIMEOUT_MS: '500',
    }),
    { logger, metrics: quietMetrics() },
  );
  cleanups.push(() => handler.close());
  return { handler, warn };
}

const writes = (tenant: string, n: number) =>
  Array.from({ length: n }, (_, i) => body({ tenant, id: `${tenant}-${i}`, data: { total: i } }));

async function keys(bucket: string): Promise<string[]> {
  const out = await s3.send(new ListObjectsV2Command({ Bucket: bucket }));
  return (out.Contents ?? []).map((o) => o.Key!).sort();
}

/** Runs one invocation with `budgetMs` until the Lambda timeout; resolves what it returned and when. */
async function invoke(handler: ReturnType<typeof handlerOn>['handler'], event: SQSEvent, budgetMs: number) {
  const startedAt = Date.now();
  const response = await handler(event, lambdaContext(budgetMs));
  return { response, elapsedMs: Date.now() - startedAt };
}

describe('handler against stalled AWS services', () => {
  it('a tenant whose prefix budget stalls is redelivered (permits-unavailable) before the deadline; the others are written', async () => {
    const r = await resources();
    // Only the stalled tenant's budget requests hang; everything else reaches dynalite.
    const dynamo = await proxy(localAwsEndpoints().dynamodb, (b) => b.includes('t=stalled/'));
    const { handler, warn } = handlerOn(r, { sqs: localAwsEndpoints().sqs, dynamodb: dynamo.endpoint });
    const event = sqsEvent([...writes('stalled', 10), ...writes('healthy', 10), 'not json']);
    const [stalledIds, healthyIds, invalidId] = [
      event.Records.slice(0, 10).map((x) => x.messageId),
      event.Records.slice(10, 20).map((x) => x.messageId),
      event.Records[20]!.messageId,
    ];

    const { response, elapsedMs } = await invoke(handler, event, 3_000);

    expect(elapsedMs).toBeLessThan(3_000);
    expect(dynamo.stalledCount).toBeGreaterThan(0);
    expect(failedIds(response).sort()).toEqual([...stalledIds].sort());
    expect(failedIds(response)).not.toContain(invalidId); // dead-lettered
    for (const id of healthyIds) expect(failedIds(response)).not.toContain(id);
    expect((await keys(r.bucket)).filter((k) => k.includes('t=healthy/'))).toHaveLength(10);
    expect((await keys(r.bucket)).filter((k) => k.includes('t=stalled/'))).toHaveLength(0);
    expect(warn).toHaveBeenCalledWith(
      'no slots in the prefix schedule: tenant writes redelivered',
      expect.objectContaining({ tenant: 'stalled' }),
    );
  });

  it('a report that stalls changes no outcome and does not hold the invocation', async () => {
    const r = await resources();
    // Another process, configured at 100 writes/s, made the prefix's schedule and booked its next 200 ms:
    // the tenant's booking queues behind it (starved) below the ceiling, so its report raises the rate,
    // which is a write. Every schedule write after the tenant's booking (the report's) hangs.
    const now = Date.now();
    await new DynamoRateBudget({
      client: dynamodb,
      tableName: r.tableName,
      name: `prefix:${r.bucket}/t=slowrel/`,
      ceiling: 100,
    }).book({ writes: 20, latestStart: now + 1_000, writeBy: now + 1_000 });
    let booked = false;
    const dynamo = await proxy(localAwsEndpoints().dynamodb, (b) => {
      if (!b.includes('t=slowrel/') || !b.includes('UpdateExpression')) return false;
      if (booked) return true;
      booked = true;
      return false;
    });
    const { handler, warn } = handlerOn(r, { sqs: localAwsEndpoints().sqs, dynamodb: dynamo.endpoint });
    const event = sqsEvent(writes('slowrel', 10));

    const { response, elapsedMs } = await invoke(handler, event, 3_000);

    expect(elapsedMs).toBeLessThan(3_000);
    expect(dynamo.stalledCount).toBeGreaterThan(0);
    expect(failedIds(response)).toEqual([]);
    expect((await keys(r.bucket)).filter((k) => k.includes('t=slowrel/'))).toHaveLength(10);
    expect(warn).toHaveBeenCalledWith(
      'rate report failed: the next report steps the rate; outcomes unchanged',
      expect.objectContaining({ prefix: `prefix:${r.bucket}/t=slowrel/` }),
    );
  });

  it('dead letters a stalled SQS cannot take in time are redelivered; the writes stand; it returns before the deadline', async () => {
    const r = await resources();
    const sqs = await proxy(undefined); // every SQS request hangs
    const { handler } = handlerOn(r, { sqs: sqs.endpoint, dynamodb: localAwsEndpoints().dynamodb });
    const event = sqsEvent([
      ...writes('healthy', 3),
      'not json',
      body({ tenant: 'healthy', op: 'bogus' as 'insert' }),
    ]);

    const { response, elapsedMs } = await invoke(handler, event, 3_000);

    expect(elapsedMs).toBeLessThan(3_000);
    expect(sqs.stalledCount).toBeGreaterThan(0);
    expect(failedIds(response).sort()).toEqual(
      event.Records.slice(3)
        .map((x) => x.messageId)
        .sort(),
    );
    expect((await keys(r.bucket)).filter((k) => k.includes('t=healthy/'))).toHaveLength(3);
  });

  it('the clients the handler builds time out a stalled request by themselves (no signal needed)', async () => {
    const stalled = await proxy(undefined);
    const clients = createAwsClients(
      loadConfig({
        BUCKET_NAME: 'unused-bucket',
        DLQ_URL: `${stalled.endpoint}/000000000000/dlq`,
        RESOURCES: JSON.stringify({ orders: {} }),
        AWS_REGION: 'us-east-1',
        AWS_ENDPOINT_URL_SQS: stalled.endpoint,
        AWS_ENDPOINT_URL_DYNAMODB: stalled.endpoint,
      }),
      {},
      { requestTimeoutMs: 200, connectionTimeoutMs: 200, maxAttempts: 1 },
    );
    cleanups.push(() => {
      clients.dynamodb.destroy();
      clients.sqs.destroy();
    });
    const dynamo = clients.dynamodb.send(new ListTablesCommand({})).catch((e: unknown) => e);
    const sqs = clients.sqs
      .send(
        new SendMessageBatchCommand({
          QueueUrl: `${stalled.endpoint}/000000000000/dlq`,
          Entries: [{ Id: '0', MessageBody: 'x' }],
        }),
      )
      .catch((e: unknown) => e);
    expect(isTimeout(await dynamo)).toBe(true);
    expect(isTimeout(await sqs)).toBe(true);
  });
});
