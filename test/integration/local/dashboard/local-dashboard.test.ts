// The dashboard on a real local pipeline (embedded stack, event-source runner, the real handler): what the
// handler's EMF lines, the runner and the sampler report shows in the page's snapshots.
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it } from 'vitest';
import { COUNTING_ONLY_S3 } from '../../../../lib/cli/local-dashboard.js';
import { Producer } from '../../../../lib/index.js';
import { DashboardState } from '../../../../lib/local/dashboard/dashboard-state.js';
import { type LocalDashboard, startLocalDashboard } from '../../../../lib/local/dashboard/local-dashboard.js';
import { type LocalPipeline, startLocalPipeline } from '../../../../lib/local/lambda/local-pipeline.js';
import { lineOf, snapshotWhen } from './sse-snapshots.js';

let pipeline: LocalPipeline | undefined;
let dashboard: LocalDashboard | undefined;
afterEach(async () => {
  await dashboard?.stop();
  await pipeline?.stop();
});

describe('startLocalDashboard on a running local pipeline', () => {
  it('shows the records written and rejected, S3 writes per prefix, invocations and the DLQ depth', async () => {
    const state = new DashboardState({ functionTimeoutMs: 8_000 });
    pipeline = await startLocalPipeline({
      resources: { orders: {} },
      chaos: COUNTING_ONLY_S3,
      batchSize: 10,
      concurrency: 2,
      metricLines: (line) => state.addEmfLine(line),
      onInvocation: (result) => state.addInvocation(result, Date.now()),
    });
    dashboard = await startLocalDashboard(pipeline, state);
    expect(dashboard.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);

    const producer = new Producer({ queueUrl: pipeline.resources.queueUrl, client: pipeline.sqs });
    const writes = ['acme', 'globex'].flatMap((tenant) =>
      Array.from({ length: 15 }, (_, i) => ({
        tenant,
        resource: 'orders',
        op: 'upsert' as const,
        id: `o-${i}`,
        data: { i },
      })),
    );
    expect((await producer.sendMany(writes)).filter((r) => r.error !== undefined)).toEqual([]);
    await pipeline.sqs.send(
      new SendMessageCommand({ QueueUrl: pipeline.resources.queueUrl, MessageBody: '{' }),
    );

    const snapshot = await snapshotWhen(
      dashboard.url,
      (s) =>
        lineOf(s, 'records', 'RecordsProcessed')?.total === 30 &&
        lineOf(s, 'local-pipeline', 'Dead letters (DLQ depth)')?.last === 1 &&
        (lineOf(s, 'local-prefix-rates', 't=globex/ accepted')?.total ?? 0) >= 15,
    );
    expect(lineOf(snapshot, 'records', 'RecordsProcessed')?.total).toBe(30);
    expect(lineOf(snapshot, 'records', 'RecordsDeadLettered')?.total).toBe(1);
    expect(lineOf(snapshot, 'rejected-by-reason', 'invalid-json')?.total).toBe(1);
    expect(lineOf(snapshot, 'pool-writes', 'Writes')?.total).toBeGreaterThanOrEqual(30);
    expect(lineOf(snapshot, 'invocations', 'Invocations')?.total).toBeGreaterThanOrEqual(4);
    expect(lineOf(snapshot, 'invocations', 'Errors')?.total).toBe(0);
    expect(lineOf(snapshot, 'local-pipeline', 'Dead letters (DLQ depth)')?.last).toBe(1);
    expect(lineOf(snapshot, 'dead-letters', 'Dead letters (failed after retries)')?.last).toBe(1);
    for (const tenant of ['acme', 'globex'])
      expect(
        lineOf(snapshot, 'local-prefix-rates', `t=${tenant}/ accepted`)?.total,
        tenant,
      ).toBeGreaterThanOrEqual(15);
    // The counting-only model limits nothing.
    expect(snapshot.s3WriteLimit).toBeNull();
    expect(lineOf(snapshot, 'local-prefix-rates', 'S3 limit')).toBeUndefined();
    expect(snapshot).toMatchObject({ emfErrors: 0 });
    expect(snapshot.emfLines).toBeGreaterThan(0);
    expect(dashboard.samples.taken).toBeGreaterThan(0);
  }, 60_000);
});
