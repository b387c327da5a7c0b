import { type DynamoDBClient, paginateScan } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { parseBudgetItem } from '../../semaphore/budget-item.js';
import type { S3BehaviourModel } from '../s3-behaviour/s3-behaviour-model.js';
import type { PipelineSample, PrefixSample } from './dashboard-state.js';

/** What the sampler reads, all of it the local stack's own. */
export interface PipelineSources {
  readonly sqs: SQSClient;
  readonly queueUrls: readonly string[];
  /** The semaphore table (the prefixes' schedules). */
  readonly dynamodb: DynamoDBClient;
  readonly tableName: string;
  /** The bucket, to tell its prefixes' schedules from others in the table. */
  readonly bucket: string;
  /** The S3 model in front of the emulator: its per-prefix counters and limit (none: no counts, no limit). */
  readonly model?: S3BehaviourModel;
  /** Invocations running right now. */
  readonly invocationsRunning: () => number;
}

/**
 * Reads the pipeline once: each queue's depths (GetQueueAttributes), every prefix schedule of the bucket
 * (a Scan of the semaphore table: one small item per prefix) and the S3 model's per-prefix write counters.
 */
export async function samplePipeline(
  sources: PipelineSources,
  now: () => number = Date.now,
): Promise<PipelineSample> {
  const [queues, schedules] = await Promise.all([
    Promise.all(sources.queueUrls.map((url) => queueDepths(sources.sqs, url))),
    readSchedules(sources),
  ]);
  const at = now();
  const byPrefix = sources.model?.stats().byPrefix ?? {};
  const names = new Set([...Object.keys(byPrefix), ...schedules.keys()]);
  const prefixes = [...names].sort().map((prefix): PrefixSample => {
    const schedule = schedules.get(prefix);
    const writes = byPrefix[prefix]?.writes;
    return {
      prefix,
      acceptedWrites: writes?.ok ?? 0,
      throttledWrites: writes?.throttled ?? 0,
      ...(schedule === undefined
        ? {}
        : { scheduleRate: schedule.rate, bookedAheadMs: Math.max(0, schedule.freeAt - at) }),
    };
  });
  return {
    at,
    queues,
    invocationsRunning: sources.invocationsRunning(),
    s3WriteLimit: sources.model?.rates.writesPerSecond ?? Number.POSITIVE_INFINITY,
    prefixes,
  };
}

async function queueDepths(sqs: SQSClient, url: string) {
  const { Attributes: a = {} } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: url,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return {
    url,
    visible: Number(a.ApproximateNumberOfMessages ?? 0),
    inFlight: Number(a.ApproximateNumberOfMessagesNotVisible ?? 0),
  };
}

/** Prefix (`t=acme/`) -> its schedule, for the budgets the handler keeps on this bucket's prefixes. */
async function readSchedules(sources: PipelineSources) {
  const namePrefix = `rate#prefix:${sources.bucket}/`;
  const schedules = new Map<string, { rate: number; freeAt: number }>();
  for await (const page of paginateScan({ client: sources.dynamodb }, { TableName: sources.tableName })) {
    for (const item of page.Items ?? []) {
      const pk = item.pk?.S ?? '';
      if (!pk.startsWith(namePrefix)) continue;
      const schedule = parseBudgetItem(item);
      if (schedule !== undefined) schedules.set(pk.slice(namePrefix.length), schedule);
    }
  }
  return schedules;
}
