// Redelivery with backoff through the local stack: the handler shortens a failed record's visibility with
// ChangeMessageVisibilityBatch (fauxqs) and the local event-source runner gets it back in seconds, not
// after the queue's visibility timeout (60 s here).

import { randomUUID } from 'node:crypto';
import { SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIngestHandler } from '../../../lib/ingest/handler/ingest-handler.js';
import { SqsVisibility, type VisibilityPort } from '../../../lib/ingest/handler/settle/redelivery-backoff.js';
import { Producer } from '../../../lib/ingest/producer.js';
import type { LocalResources } from '../../../lib/local/emulators/provision.js';
import { provisionLocal } from '../../../lib/local/emulators/provision.js';
import { EventSourceRunner } from '../../../lib/local/lambda/event-source-runner.js';
import { localAwsEndpoints, localClientConfig } from '../../support/local-aws.js';
import { quietMetrics, silentLogger, TrackingStore } from '../../unit/ingest/handler/support.js';
import { stackConfig, useTestCredentials } from './emulated-stack.js';

useTestCredentials();

let r: LocalResources;
const sqs = new SQSClient(localClientConfig('sqs'));

beforeAll(async () => {
  const name = `backoff-${randomUUID().slice(0, 8)}`;
  r = await provisionLocal({
    endpoints: localAwsEndpoints(),
    bucket: name,
    queueName: `${name}-ingest`,
    tableName: `${name}-semaphore`,
    visibilityTimeoutSeconds: 60,
  });
});

afterAll(() => {
  sqs.destroy();
});

describe('redelivery backoff on the local stack', () => {
  it('a record that failed once is back and written within seconds, well before the queue timeout', async () => {
    const store = new TrackingStore({ bucket: r.bucket });
    let failures = 0;
    store.hook = () => {
      if (failures++ === 0)
        throw Object.assign(new Error('reduce your request rate'), {
          name: 'SlowDown',
          $metadata: { httpStatusCode: 503 },
        });
    };
    // The handler's own port on its own SQS client, with the first backoff shortened to 1 s for the test.
    const config = stackConfig(r, { WRITE_RETRIES: '0', WRITE_TIMEOUT_MS: '1000' });
    const real = new SqsVisibility(new SQSClient(localClientConfig('sqs')));
    const asked: number[] = [];
    const port: VisibilityPort = {
      change: (changes, options) => {
        asked.push(...changes.map((c) => c.visibilityTimeoutSeconds));
        return real.change(
          changes.map((c) => ({ ...c, visibilityTimeoutSeconds: 1 })),
          options,
        );
      },
    };
    const handler = createIngestHandler(config, {
      store,
      redeliveries: port,
      logger: silentLogger(),
      metrics: quietMetrics(),
    });
    const runner = new EventSourceRunner({
      client: sqs,
      queueUrl: r.queueUrl,
      handler,
      batchSize: 10,
      visibilityTimeoutSeconds: 60,
      functionTimeoutMs: 10_000,
      waitTimeSeconds: 1,
    });
    await runner.start();
    try {
      await new Producer({ queueUrl: r.queueUrl, client: sqs, resources: { orders: {} } }).send({
        tenant: 'acme',
        resource: 'orders',
        op: 'upsert',
        id: 'o-1',
        data: { n: 1 },
      });
      const started = Date.now();
      const stats = await runner.until((s) => s.deleted === 1, { timeoutMs: 15_000 });
      expect(Date.now() - started).toBeLessThan(15_000);
      expect(stats).toMatchObject({ invocations: 2, redelivered: 1, failedItems: 1, deleted: 1 });
      // The handler asked for the first receive's backoff (5 s by default).
      expect(asked).toEqual([5]);
      expect(store.keys()).toEqual(['t=acme/r=orders/id=o-1.json']);
    } finally {
      await runner.stop();
      await handler.close();
    }
  });
});
