// FIFO end to end (issue 15) on the embedded stack: the real handler behind the local event source, the
// S3 chaos proxy failing requests, every write of every record sent at once; the final state must be exact.
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { isHiddenJson } from '../../../../lib/db/sequenced-state.js';
import type { ProducerWrite } from '../../../../lib/ingest/message/types.js';
import { Producer } from '../../../../lib/ingest/producer.js';
import { receiveAll } from '../../../../lib/local/demo/demo-verify.js';
import { clientConfigFor } from '../../../../lib/local/emulators/local-aws.js';
import type { InvocationResult } from '../../../../lib/local/lambda/event-source-runner.js';
import { startLocalPipeline } from '../../../../lib/local/lambda/local-pipeline.js';

const RECORDS = 6;
const WRITES_PER_RECORD = 12;

/** Each record's history: upserts, shallow-merging updates, a delete and a re-creation, in order. */
function histories(): { writes: ProducerWrite[]; expected: Map<string, Record<string, unknown> | null> } {
  const writes: ProducerWrite[] = [];
  const expected = new Map<string, Record<string, unknown> | null>();
  for (let r = 0; r < RECORDS; r++) {
    const id = `rec-${r}`;
    let state: Record<string, unknown> | null = null;
    for (let n = 0; n < WRITES_PER_RECORD; n++) {
      if (n === 0 || n === 7) {
        state = { n, label: `v${n}` };
        writes.push({ tenant: 'acme', resource: 'orders', op: 'upsert', id, data: state });
      } else if (n === 6 || (r === 0 && n === WRITES_PER_RECORD - 1)) {
        state = null;
        writes.push({ tenant: 'acme', resource: 'orders', op: 'delete', id });
      } else {
        const patch = { n, [`f${n % 3}`]: n };
        state = { ...(state ?? {}), ...patch };
        writes.push({ tenant: 'acme', resource: 'orders', op: 'update', id, data: patch });
      }
    }
    expected.set(`t=acme/r=orders/id=${id}.json`, state);
  }
  // Interleave the records, as concurrent producers would; each record's own order is kept.
  writes.sort((a, b) => (writes.indexOf(a) % WRITES_PER_RECORD) - (writes.indexOf(b) % WRITES_PER_RECORD));
  return { writes, expected };
}

/** The fields the histories write (the stored record also carries id, version, timestamps). */
function dataOf(record: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (record === undefined) return undefined;
  return Object.fromEntries(Object.entries(record).filter(([k]) => /^(n|label|f\d)$/.test(k)));
}

async function stored(s3: S3Client, bucket: string): Promise<Map<string, Record<string, unknown>>> {
  const out = new Map<string, Record<string, unknown>>();
  const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket }));
  for (const { Key } of page.Contents ?? []) {
    const body = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: Key! }));
    const record = JSON.parse(await body.Body!.transformToString()) as Record<string, unknown>;
    // A tombstone (or pending partial update) keeps a deleted record's key: the record is not there.
    if (!isHiddenJson(record)) out.set(Key!, record);
  }
  return out;
}

describe('FIFO end to end on the embedded stack', () => {
  it('ends in exactly the in-order final state, under S3 errors and redelivery, with everything sent at once', async () => {
    const invocations: InvocationResult[] = [];
    const pipeline = await startLocalPipeline({
      resources: { orders: {} },
      fifo: true,
      // S3 answers 500 to a share of requests and the pool does not retry: writes fail transiently, the
      // handler returns the rest of their groups, and the groups come back in order after the visibility
      // timeout. Seeded: the same requests fail on every run.
      chaos: { faults: { internalErrorRate: 0.04 }, seed: 3 },
      env: { WRITE_RETRIES: '0' },
      onInvocation: (result) => invocations.push(result),
    });
    const s3 = new S3Client(clientConfigFor(pipeline.aws.emulatorEndpoints).s3);
    try {
      const { writes, expected } = histories();
      const producer = new Producer({ queueUrl: pipeline.resources.queueUrl, client: pipeline.sqs });
      const sent = await producer.sendMany(writes);
      expect(sent.filter((r) => r.error !== undefined)).toEqual([]);
      await pipeline.runner.waitForIdle({ timeoutMs: 100_000, pollIntervalMs: 200 });

      const records = await stored(s3, pipeline.resources.bucket);
      for (const [key, want] of expected) {
        const got = records.get(key);
        if (want === null) expect(got, key).toBeUndefined();
        else expect(dataOf(got), key).toEqual(want);
      }
      expect([...records.keys()].every((k) => expected.has(k))).toBe(true);
      expect(await receiveAll(pipeline.sqs, pipeline.resources.dlqUrl)).toEqual([]);
      // The failure path ran: some messages came back and were applied in their turn.
      expect(invocations.some((inv) => inv.failedMessageIds.length > 0)).toBe(true);
      expect(pipeline.runner.stats.redelivered).toBeGreaterThan(0);
      // Every message was deleted exactly once (acknowledged), none left for the DLQ.
      expect(pipeline.runner.stats.deleted).toBe(writes.length);
    } finally {
      s3.destroy();
      await pipeline.stop();
    }
  }, 120_000);
});
