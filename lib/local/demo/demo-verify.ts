import { isDeepStrictEqual } from 'node:util';
import { GetObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { isHiddenJson } from '../../db/sequenced-state.js';
import { ExecutorPool } from '../../pool/index.js';
import { DEMO_FIELDS, type DemoLoad, type DemoRecord } from './demo-load.js';

/** Reason shown for DLQ messages without a `reason` attribute (moved by the queue's redrive policy). */
export const REDRIVE_REASON = 'max-receive-count';

export interface DemoVerification {
  /** Records present with exactly the expected content. */
  written: number;
  /** Records whose last write is a delete, and that are indeed absent. */
  deletedAsExpected: number;
  /** Messages found in the DLQ, in total and per `reason` attribute. */
  deadLettered: number;
  deadLetteredByReason: Record<string, number>;
  /**
   * Expected effects that did not happen: a record missing or with wrong content, a bad message not in the
   * DLQ, a good write in the DLQ whose record is not as expected.
   */
  lost: number;
  /**
   * Effects that happened once too often: records that must not exist, a bad message dead-lettered twice, a
   * good write dead-lettered (whatever its record shows, a valid write must never reach the DLQ).
   */
  duplicated: number;
  /** Up to 20 examples of what was lost or duplicated, for the summary. */
  problems: string[];
}

export interface VerifyDemoOptions {
  s3: S3Client;
  sqs: SQSClient;
  bucket: string;
  dlqUrl: string;
  load: DemoLoad;
  /**
   * Good writes the function must refuse (a producer writing a tenant it may not), by record id: each must
   * be in the DLQ with this reason, and nothing of it stored.
   * @default []
   * @example [{ id: 'cross-tenant-probe', reason: 'tenant-not-allowed' }]
   */
  expectedRefusals?: readonly { readonly id: string; readonly reason: string }[];
}

function idOf(body: string): unknown {
  try {
    return (JSON.parse(body) as { id?: unknown }).id;
  } catch {
    return undefined;
  }
}

const KEY_PATTERN = /(?:^|\/)(t=[^/]+\/r=[^/]+\/id=[^/]+\.json)$/;

async function listKeys(s3: S3Client, bucket: string): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }));
    for (const o of page.Contents ?? []) if (o.Key !== undefined) keys.push(o.Key);
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token !== undefined);
  return keys;
}

/** Receives every message of the DLQ (they stay hidden for a minute, long enough to read them all once). */
export async function receiveAll(
  sqs: SQSClient,
  queueUrl: string,
): Promise<{ body: string; reason: string }[]> {
  const messages: { body: string; reason: string }[] = [];
  for (;;) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 0,
        VisibilityTimeout: 60,
        MessageAttributeNames: ['All'],
      }),
    );
    if (Messages.length === 0) return messages;
    for (const m of Messages) {
      messages.push({
        body: m.Body ?? '',
        reason: m.MessageAttributes?.reason?.StringValue ?? REDRIVE_REASON,
      });
    }
  }
}

// The stored body holds the record; tolerate metadata beside the fields, or the fields under `data`.
function demoFieldsOf(stored: unknown): DemoRecord {
  const source =
    typeof stored === 'object' && stored !== null && !('label' in stored) && 'data' in stored
      ? (stored as { data: unknown }).data
      : stored;
  const fields: Record<string, unknown> = {};
  if (typeof source === 'object' && source !== null) {
    for (const f of DEMO_FIELDS) if (f in source) fields[f] = (source as Record<string, unknown>)[f];
  }
  return fields as DemoRecord;
}

/**
 * Reads back the bucket (ListObjectsV2 + GetObject) and the DLQ (receive all) and compares them with the
 * demo load's expected final state. Nothing is assumed from counters.
 */
export async function verifyDemo(options: VerifyDemoOptions): Promise<DemoVerification> {
  const { s3, sqs, bucket, dlqUrl, load } = options;
  const refusals = new Map(
    (options.expectedRefusals ?? []).map((r) => [r.id, { reason: r.reason, seen: 0 }]),
  );
  const result: DemoVerification = {
    written: 0,
    deletedAsExpected: 0,
    deadLettered: 0,
    deadLetteredByReason: {},
    lost: 0,
    duplicated: 0,
    problems: [],
  };
  const problem = (kind: 'lost' | 'duplicated', text: string) => {
    result[kind]++;
    if (result.problems.length < 20) result.problems.push(`${kind}: ${text}`);
  };

  const stored = new Map<string, DemoRecord>();
  // Our own pool, not a devDependency: `s3-ingest local` runs from the published package too.
  const reads = new ExecutorPool({ concurrency: 16 });
  const keys = await listKeys(s3, bucket);
  await Promise.all(
    keys.map((fullKey) =>
      reads.enqueue(async () => {
        const key = KEY_PATTERN.exec(fullKey)?.[1];
        if (key === undefined) {
          problem('duplicated', `unexpected object ${fullKey}`);
          return;
        }
        const out = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: fullKey }));
        const text = (await out.Body?.transformToString('utf-8')) ?? '';
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        // A tombstone (or pending partial) holds the key of a record that is not there (lib/db README).
        if (typeof body === 'object' && body !== null && isHiddenJson(body as Record<string, unknown>))
          return;
        stored.set(key, demoFieldsOf(body));
      }),
    ),
  );

  for (const [key, want] of load.expected) {
    const got = stored.get(key);
    if (want === null) {
      if (got === undefined) result.deletedAsExpected++;
      else problem('duplicated', `${key} should be deleted but exists`);
    } else if (got === undefined) {
      problem('lost', `${key} missing`);
    } else if (!isDeepStrictEqual({ ...got }, { ...want })) {
      problem('lost', `${key} holds ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
    } else {
      result.written++;
    }
  }
  for (const key of stored.keys()) {
    if (!load.expected.has(key)) problem('duplicated', `${key} was never written by the demo`);
  }

  const bad = new Map<string, number>();
  for (const round of load.rounds) for (const m of round.bad) bad.set(m.body, 0);
  const dead = await receiveAll(sqs, dlqUrl);
  result.deadLettered = dead.length;
  for (const m of dead) {
    result.deadLetteredByReason[m.reason] = (result.deadLetteredByReason[m.reason] ?? 0) + 1;
    const refusal = refusals.get(idOf(m.body) as string);
    if (refusal !== undefined && refusal.reason === m.reason) {
      refusal.seen++;
      if (refusal.seen > 1)
        problem('duplicated', `refused write dead-lettered twice: ${m.body.slice(0, 120)}`);
      continue;
    }
    const seen = bad.get(m.body);
    if (seen === undefined) {
      // A good write in the DLQ: its effect is missing (already counted as lost above) or it also landed.
      problem('duplicated', `good write dead-lettered (${m.reason}): ${m.body.slice(0, 120)}`);
    } else {
      bad.set(m.body, seen + 1);
      if (seen >= 1) problem('duplicated', `bad message dead-lettered twice: ${m.body.slice(0, 120)}`);
    }
  }
  for (const [body, seen] of bad)
    if (seen === 0) problem('lost', `bad message not in the DLQ: ${body.slice(0, 120)}`);
  for (const [id, { reason, seen }] of refusals)
    if (seen === 0) problem('lost', `write ${id} was not refused with ${reason}`);
  return result;
}
