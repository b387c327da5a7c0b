import { parseArgs } from 'node:util';
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { shardLabel, shardOf } from '../db/shard-hash.js';
import { s3ClientFromEnv, sqsClientFromEnv } from './clients.js';
import { type CliIo, EXIT } from './io.js';

export const INSPECT_HELP = `Usage: s3-ingest inspect [--bucket B] [--queue-url Q] [--dlq-url D] [--json]

Counts records per tenant and resource in the bucket (keys t=<tenant>/r=<resource>/id=<id>.json, or
t=<tenant>/r=<resource>/s=<shard>/id=<id>.json for a sharded resource, all shards counted together) and
messages in the queue and the DLQ (visible, in flight, delayed). At least one of the three is required.
After a completed reshard copy, a resource's records are its new layout's keys; the old layout's keys
are shown apart until "reshard --remove-old" deletes them.

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
  /**
   * tenant -> resource -> the keys of its old layout, left by a completed resharding copy until
   * `reshard --remove-old` deletes them (not counted as records). Absent when no copy has left any.
   */
  oldLayoutKeys?: Record<string, Record<string, OldLayoutKeys>>;
}

/** A resharded resource's keys outside its new layout. */
export interface OldLayoutKeys {
  fromShards: number;
  toShards: number;
  keys: number;
}

// A record key, unsharded (`t=<tenant>/r=<resource>/id=<id>.json`) or sharded (`.../r=<resource>/s=<shard>/id=...`,
// docs/decisions/sharded-keys.md): a sharded resource's records count as its own, whatever their shard.
const RECORD_KEY = /(?:^|\/)t=([^/]+)\/r=([^/]+)\/(?:s=([0-9]+)\/)?id=([^/]+)\.json$/;
// A completed resharding copy's marker (lib/db/layout-copy-marker.ts). It lists before the tenant's records
// (`layout-copy/` sorts before `r=`, and S3 lists keys in that order), so the keys after it are judged by
// the layout it made current.
const COPY_MARKER_KEY = /(?:^|\/)t=([^/]+)\/layout-copy\/r=([^/]+)\/from=([0-9]+)\/to=([0-9]+)\.json$/;

export async function countBucket(s3: S3Client, bucket: string): Promise<BucketCounts> {
  const counts: BucketCounts = { total: 0, byTenant: {}, other: 0 };
  /** `<tenant>/<resource>` -> the layout its completed copy made current. */
  const moved = new Map<string, OldLayoutKeys>();
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }));
    for (const object of page.Contents ?? []) {
      const key = object.Key ?? '';
      const match = RECORD_KEY.exec(key);
      if (match === null) {
        counts.other++;
        const marker = COPY_MARKER_KEY.exec(key);
        if (marker !== null) {
          const [, tenant = '', resource = '', from = '', to = ''] = marker;
          moved.set(`${tenant}/${resource}`, { fromShards: Number(from), toShards: Number(to), keys: 0 });
        }
        continue;
      }
      const [, tenant = '', resource = '', shard, id = ''] = match;
      const move = moved.get(`${tenant}/${resource}`);
      if (move !== undefined && !inLayout(move.toShards, shard, id)) {
        move.keys++;
        counts.oldLayoutKeys ??= {};
        const perResource = counts.oldLayoutKeys[tenant] ?? {};
        counts.oldLayoutKeys[tenant] = perResource;
        perResource[resource] = move;
        continue;
      }
      const perResource = counts.byTenant[tenant] ?? {};
      counts.byTenant[tenant] = perResource;
      perResource[resource] = (perResource[resource] ?? 0) + 1;
      counts.total++;
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token !== undefined);
  return counts;
}

/** Whether a record key with shard segment `shard` (undefined: unsharded) is record `id`'s key among `shards`. */
function inLayout(shards: number, shard: string | undefined, id: string): boolean {
  if (shards <= 1) return shard === undefined;
  return shard === shardLabel(shardOf(id, shards));
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
        for (const [resource, n] of Object.entries(perResource).sort()) {
          const old = records.oldLayoutKeys?.[tenant]?.[resource];
          const move =
            old === undefined
              ? ''
              : ` (moved from ${old.fromShards} to ${old.toShards} shards; ${old.keys} old-layout key(s) until reshard --remove-old)`;
          io.stdout.write(`  ${tenant}/${resource}: ${n}${move}\n`);
        }
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
