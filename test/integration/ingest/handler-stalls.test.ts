import { DynamoDBClient, ListTablesCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { isTimeout } from '../../../lib/errors/classify.js';
import { loadConfig } from '../../../lib/ingest/config.js';
import { createAwsClients } from '../../../lib/ingest/handler/aws-clients.js';
import { createIngestHandler } from '../../../lib/ingest/handler/ingest-handler.js';
import type { LocalResources } from '../../../lib/local/emulators/provision.js';
import { createBudgetRequest } from '../../../lib/semaphore/budget-item.js';
import { localAwsEndpoints, localClientConfig } from '../../support/local-aws.js';
import {
  body,
  failedIds,
  keyOf,
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
    // Another process, configured at 20 writes/s, made the prefix's schedule: the tenant books its 10 slots
    // at 20/s (500 ms of them), writes, and reports. Every budget read after its booking hangs: the report's,
    // and a booking again's when the booking's answer came after its first slot (the writes left for it
    // are then redelivered at the cutoff, as for any booking that stalls).
    await dynamodb.send(
      new PutItemCommand(createBudgetRequest(r.tableName, `prefix:${r.bucket}/t=slowrel/`, 20)),
    );
    let booked = false;
    const dynamo = await proxy(localAwsEndpoints().dynamodb, (b) => {
      if (!b.includes('t=slowrel/')) return false;
      if (b.includes('UpdateExpression')) booked = true;
      return booked && !b.includes('UpdateExpression');
    });
    const { handler, warn } = handlerOn(r, { sqs: localAwsEndpoints().sqs, dynamodb: dynamo.endpoint });
    // Inserts: a conditional PUT each, no read first.
    const ids = Array.from({ length: 10 }, (_, i) => `slowrel-${i}`);
    const event = sqsEvent(
      ids.map((id, i) => body({ tenant: 'slowrel', op: 'insert', id, data: { total: i } })),
    );

    const { response, elapsedMs } = await invoke(handler, event, 3_000);

    expect(elapsedMs).toBeLessThan(3_000);
    expect(dynamo.stalledCount).toBeGreaterThan(0);
    // No outcome changed: every record written is acknowledged, and only those.
    const written = new Set(await keys(r.bucket));
    const acknowledged = event.Records.filter((x) => !failedIds(response).includes(x.messageId));
    expect(written.size).toBeGreaterThan(0);
    expect(acknowledged.map((x) => event.Records.indexOf(x))).toEqual(
      ids.flatMap((id, i) => (written.has(keyOf('slowrel', 'orders', id)) ? [i] : [])),
    );
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
