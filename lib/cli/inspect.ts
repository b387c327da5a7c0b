import { parseArgs } from 'node:util';
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { s3ClientFromEnv, sqsClientFromEnv } from './clients.js';
import { type CliIo, EXIT } from './io.js';

export const INSPECT_HELP = `Usage: s3-ingest inspect [--bucket B] [--queue-url Q] [--dlq-url D] [--json]

Counts records per tenant and resource in the bucket (keys t=<tenant>/r=<resource>/id=<id>.json, or
t=<tenant>/r=<resource>/s=<shard>/id=<id>.json for a sharded resource, all shards counted together) and
messages in the queue and the DLQ (visible, in flight, delayed). At least one of the three is required.

Options:
  --bucket B        the records bucket
  --queue-url Q     the ingestion queue
  --dlq-url D       its dead-letter queue
  --json            print the result as one JSON object on stdout
  -h, --help        this help

AWS settings follow the SDK (default credential chain, AWS_REGION, AWS_ENDPOINT_URL[_S3|_SQS]).`;

export interface QueueCounts {
  visible: number;
  inFlight: number;
  delayed: number;
}

/** Messages anywhere in the queue: waiting, being processed, or delayed. 0 means drained. */
export function queueDepth(counts: QueueCounts): number {
  return counts.visible + counts.inFlight + counts.delayed;
}

export interface BucketCounts {
  total: number;
  /** tenant -> resource -> records. */
  byTenant: Record<string, Record<string, number>>;
  /** Objects whose key is not a record key. */
  other: number;
}

// A record key, unsharded (`t=<tenant>/r=<resource>/id=<id>.json`) or sharded (`.../r=<resource>/s=<shard>/id=...`,
// docs/decisions/sharded-keys.md): a sharded resource's records count as its own, whatever their shard.
const RECORD_KEY = /(?:^|\/)t=([^/]+)\/r=([^/]+)\/(?:s=[0-9]+\/)?id=[^/]+\.json$/;

export async function countBucket(s3: S3Client, bucket: string): Promise<BucketCounts> {
  const counts: BucketCounts = { total: 0, byTenant: {}, other: 0 };
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }));
    for (const object of page.Contents ?? []) {
      const match = RECORD_KEY.exec(object.Key ?? '');
      if (match === null) {
        counts.other++;
        continue;
      }
      const [, tenant = '', resource = ''] = match;
      const perResource = counts.byTenant[tenant] ?? {};
      counts.byTenant[tenant] = perResource;
      perResource[resource] = (perResource[resource] ?? 0) + 1;
      counts.total++;
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token !== undefined);
  return counts;
}

export async function countQueue(sqs: SQSClient, queueUrl: string): Promise<QueueCounts> {
  const { Attributes: a = {} } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: [
        'ApproximateNumberOfMessages',
        'ApproximateNumberOfMessagesNotVisible',
        'ApproximateNumberOfMessagesDelayed',
      ],
    }),
  );
  return {
    visible: Number(a.ApproximateNumberOfMessages ?? 0),
    inFlight: Number(a.ApproximateNumberOfMessagesNotVisible ?? 0),
    delayed: Number(a.ApproximateNumberOfMessagesDelayed ?? 0),
  };
}

export async function inspectCommand(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      bucket: { type: 'string' },
      'queue-url': { type: 'string' },
      'dlq-url': { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    io.stdout.write(`${INSPECT_HELP}\n`);
    return EXIT.ok;
  }
  const { bucket, 'queue-url': queueUrl, 'dlq-url': dlqUrl } = values;
  if (bucket === undefined && queueUrl === undefined && dlqUrl === undefined) {
    io.stderr.write(`${INSPECT_HELP}\n`);
    return EXIT.usage;
  }
  const s3 = await s3ClientFromEnv(io.env);
  const sqs = sqsClientFromEnv(io.env);
  try {
    const [records, queue, dlq] = await Promise.all([
      bucket === undefined ? undefined : countBucket(s3, bucket),
      queueUrl === undefined ? undefined : countQueue(sqs, queueUrl),
      dlqUrl === undefined ? undefined : countQueue(sqs, dlqUrl),
    ]);
    if (values.json) {
      io.stdout.write(`${JSON.stringify({ bucket: records, queue, dlq })}\n`);
      return EXIT.ok;
    }
    if (records !== undefined) {
      io.stdout.write(
        `bucket ${bucket}: ${records.total} record(s)${records.other ? `, ${records.other} other object(s)` : ''}\n`,
      );
      for (const [tenant, perResource] of Object.entries(records.byTenant).sort()) {
        for (const [resource, n] of Object.entries(perResource).sort())
          io.stdout.write(`  ${tenant}/${resource}: ${n}\n`);
      }
    }
    const line = (name: string, c: QueueCounts) =>
      io.stdout.write(`${name}: ${c.visible} visible, ${c.inFlight} in flight, ${c.delayed} delayed\n`);
    if (queue !== undefined) line('queue', queue);
    if (dlq !== undefined) line('dlq', dlq);
    return EXIT.ok;
  } finally {
    s3.destroy();
    sqs.destroy();
  }
}
