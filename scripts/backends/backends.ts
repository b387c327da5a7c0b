import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { type CephRgw, startCephRgw } from './ceph-rgw.js';
import { type DynamoDbLocal, startDynamoDbLocal } from './dynamodb-local.js';
import { createRunDir, sweepLeftoverRunDirs } from './run-dir.js';

/** What the started servers offer to clients. */
export interface BackendEndpoints {
  /** Ceph RADOS Gateway, with a bucket that has already taken its first (slow) writes. */
  rgw: { endpoint: string; credentials: { accessKeyId: string; secretAccessKey: string }; bucket: string };
  dynamodbLocal: { endpoint: string };
}

export interface RunningBackends {
  readonly endpoints: BackendEndpoints;
  readonly timings: { rgwReadyMs: number; rgwWarmMs: number; dynamodbLocalReadyMs: number };
  /** Stops every server and removes the run's directory. Idempotent. */
  stop(): Promise<void>;
}

/** The bucket the suites share (each test works under its own tenant prefix). */
export const RGW_BUCKET = 'backends';

/**
 * RGW creates its data pools on the first bucket and the first object (2-4 s): pay that once here, not in
 * the first test's timeout.
 */
async function warmUp(rgw: CephRgw): Promise<void> {
  const client = new S3Client({
    endpoint: rgw.endpoint,
    region: 'us-east-1',
    credentials: { ...rgw.credentials },
    forcePathStyle: true,
  });
  try {
    await client.send(new CreateBucketCommand({ Bucket: RGW_BUCKET }));
    await client.send(new PutObjectCommand({ Bucket: RGW_BUCKET, Key: 'warm-up', Body: 'warm' }));
  } finally {
    client.destroy();
  }
}

/**
 * Starts Ceph RGW and DynamoDB Local side by side in one fresh temporary directory (after cleaning up what
 * a killed earlier run left), warms RGW up, and returns their endpoints. On any failure everything started
 * is stopped and the directory removed before the error propagates.
 */
export async function startBackends(): Promise<RunningBackends> {
  sweepLeftoverRunDirs();
  const runDir = createRunDir();
  const t0 = Date.now();
  const timings = { rgwReadyMs: 0, rgwWarmMs: 0, dynamodbLocalReadyMs: 0 };
  const rgwStarting = startCephRgw(runDir).then(async (rgw) => {
    timings.rgwReadyMs = Date.now() - t0;
    return rgw;
  });
  const dynamoStarting = startDynamoDbLocal(runDir).then((ddb) => {
    timings.dynamodbLocalReadyMs = Date.now() - t0;
    return ddb;
  });
  const [rgw, ddb] = await Promise.allSettled([rgwStarting, dynamoStarting]);
  const started = [rgw, ddb].flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await Promise.all(started.map((server: CephRgw | DynamoDbLocal) => server.stop()));
    runDir.remove();
  };
  try {
    if (rgw.status === 'rejected') throw rgw.reason;
    if (ddb.status === 'rejected') throw ddb.reason;
    const warmStart = Date.now();
    await warmUp(rgw.value);
    timings.rgwWarmMs = Date.now() - warmStart;
    return {
      endpoints: {
        rgw: { endpoint: rgw.value.endpoint, credentials: rgw.value.credentials, bucket: RGW_BUCKET },
        dynamodbLocal: { endpoint: ddb.value.endpoint },
      },
      timings,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
