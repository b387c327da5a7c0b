// npm run bench:cold-start — builds the Lambda bundle as the stack does (bench/cold-start/bundle.ts), reports
// its size and largest inputs (esbuild metafile), then starts it cold in fresh Node processes
// (bench/cold-start/probe.mjs) against the local stack: Node's boot, the bundle's module evaluation (config,
// clients, Powertools) and the first invocation against a warm one of the same shape. Variants interleave
// per round: with NODE_OPTIONS=--enable-source-maps (how the function runs:
// docs/decisions/source-maps-at-runtime.md) and without it.
// BENCH_COLD_STARTS (default 15) sets the processes per variant.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { encodeWrite } from '../lib/ingest/message/encode.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION, startLocalAws } from '../lib/local/emulators/local-aws.js';
import { provisionLocal } from '../lib/local/emulators/provision.js';
import { buildLambdaBundle, bytesByPackage, largestInputs } from './cold-start/bundle.js';
import { type Row, writeResults } from './support/report.js';
import { formatSpread, type Spread, spreadOf } from './support/stats.js';

const STARTS = Number(process.env.BENCH_COLD_STARTS ?? 15);
const RECORDS = 10;
const probe = join(import.meta.dirname, 'cold-start', 'probe.mjs');
// The resources of cdk.json's defaults: one with a schema (compiled at the first write), one without.
const RESOURCES = {
  orders: {
    type: 'object',
    required: ['total'],
    properties: { total: { type: 'number', minimum: 0 }, status: { type: 'string' } },
  },
  events: {},
};

interface Phase {
  wallMs: number;
  cpuMs: number;
}
interface ProbeResult {
  bootMs: number;
  init: Phase;
  firstInvoke: Phase;
  warmInvoke: Phase;
  failures: number;
  heapUsedBytes: number;
}

/** A batch of `RECORDS` inserts over two tenants and both resources, as Lambda hands it over. */
function batch(round: string): SQSEvent {
  const now = Date.now();
  const Records = Array.from({ length: RECORDS }, (_, i): SQSRecord => {
    const resource = i % 2 === 0 ? 'orders' : 'events';
    const { body } = encodeWrite(
      {
        tenant: `tenant-${i % 2}`,
        resource,
        op: 'insert',
        id: `${round}-${i}`,
        data: resource === 'orders' ? { total: i, status: 'new' } : { kind: 'click', at: now },
      },
      { resources: RESOURCES },
    );
    return {
      messageId: `${round}-${i}`,
      receiptHandle: `${round}-${i}`,
      body,
      attributes: {
        ApproximateReceiveCount: '1',
        SentTimestamp: String(now + i),
        SenderId: 'cold-start',
        ApproximateFirstReceiveTimestamp: String(now + i),
      },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:s3-ingest-local-ingest',
      awsRegion: LOCAL_REGION,
    };
  });
  return { Records };
}

function runProbe(bundle: string, events: string, env: NodeJS.ProcessEnv): Promise<ProbeResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [probe, bundle, events], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      err += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('@@cold-start@@'));
      if (code !== 0 || line === undefined) {
        reject(new Error(`cold-start probe exited with ${code}\n${err.slice(-2000)}${out.slice(-1000)}`));
        return;
      }
      resolve(JSON.parse(line.slice('@@cold-start@@'.length)) as ProbeResult);
    });
  });
}

const outdir = mkdtempSync(join(tmpdir(), 's3-ingest-cold-start-'));
const aws = await startLocalAws();
try {
  const bundle = await buildLambdaBundle(outdir);
  const resources = await provisionLocal({ endpoints: aws.emulatorEndpoints });
  const baseEnv: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    AWS_REGION: LOCAL_REGION,
    AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
    AWS_ENDPOINT_URL_S3: aws.endpoints.s3,
    AWS_ENDPOINT_URL_SQS: aws.endpoints.sqs,
    AWS_ENDPOINT_URL_DYNAMODB: aws.endpoints.dynamodb,
    BUCKET_NAME: resources.bucket,
    DLQ_URL: resources.dlqUrl,
    SEMAPHORE_TABLE: resources.tableName,
    RESOURCES: JSON.stringify(RESOURCES),
    POOL_CONCURRENCY: '64',
    FUNCTION_TIMEOUT_SECONDS: '60',
    POWERTOOLS_SERVICE_NAME: 's3-ingest',
    POWERTOOLS_METRICS_NAMESPACE: 'S3Ingest',
    POWERTOOLS_LOG_LEVEL: 'INFO',
  };
  const variants = [
    { name: 'deployed (--enable-source-maps)', env: { ...baseEnv, NODE_OPTIONS: '--enable-source-maps' } },
    { name: 'without source maps', env: baseEnv },
  ];
  const results = new Map<string, ProbeResult[]>(variants.map((v) => [v.name, []]));
  for (let round = 0; round < STARTS; round++) {
    for (const variant of variants) {
      // Fresh ids each start: inserts of ids already written would be refused (412) and skip the writes.
      const eventsFile = join(outdir, `events-${round}.json`);
      writeFileSync(
        eventsFile,
        JSON.stringify([
          batch(`r${round}a${variant.name.length}`),
          batch(`r${round}b${variant.name.length}`),
        ]),
      );
      const result = await runProbe(bundle.path, eventsFile, variant.env);
      if (result.failures > 0) throw new Error(`cold-start probe: ${result.failures} records failed`);
      results.get(variant.name)!.push(result);
    }
    process.stderr.write(`  round ${round + 1}/${STARTS}\n`);
  }

  const cell = (s: Spread) => formatSpread(s);
  const rows: Row[] = variants.map(({ name }) => {
    const runs = results.get(name)!;
    const of = (pick: (r: ProbeResult) => number) => spreadOf(runs.map(pick));
    return {
      variant: name,
      starts: runs.length,
      'node boot ms': cell(of((r) => r.bootMs)),
      'module evaluation ms': cell(of((r) => r.init.wallMs)),
      'first invocation ms': cell(of((r) => r.firstInvoke.wallMs)),
      'warm invocation ms': cell(of((r) => r.warmInvoke.wallMs)),
      'first-invocation setup ms': cell(of((r) => r.firstInvoke.wallMs - r.warmInvoke.wallMs)),
      'init + first invocation CPU ms': cell(of((r) => r.init.cpuMs + r.firstInvoke.cpuMs)),
    };
  });
  const spreads = Object.fromEntries(
    variants.map(({ name }) => {
      const runs = results.get(name)!;
      return [
        name,
        {
          bootMs: spreadOf(runs.map((r) => r.bootMs)),
          initWallMs: spreadOf(runs.map((r) => r.init.wallMs)),
          initCpuMs: spreadOf(runs.map((r) => r.init.cpuMs)),
          firstInvokeWallMs: spreadOf(runs.map((r) => r.firstInvoke.wallMs)),
          firstInvokeCpuMs: spreadOf(runs.map((r) => r.firstInvoke.cpuMs)),
          warmInvokeWallMs: spreadOf(runs.map((r) => r.warmInvoke.wallMs)),
          firstInvocationSetupMs: spreadOf(runs.map((r) => r.firstInvoke.wallMs - r.warmInvoke.wallMs)),
          heapUsedBytes: spreadOf(runs.map((r) => r.heapUsedBytes)),
        },
      ];
    }),
  );
  const packages = bytesByPackage(bundle.metafile);
  console.log(`\nbundle: ${(bundle.bytes / 1024).toFixed(0)} KB (${bundle.bytes} bytes), largest packages:`);
  for (const p of packages.slice(0, 12))
    console.log(`  ${(p.bytes / 1024).toFixed(1).padStart(7)} KB  ${p.package}`);
  writeResults('cold-start', rows, {
    description: `Built Lambda bundle (functions/ingest.ts, as infra/ingest-stack.ts builds it) started in ${STARTS} fresh Node processes per variant against the local stack; a batch of ${RECORDS} inserts (2 tenants, a schema resource and a schemaless one) first cold, then warm. Figures: median (min-max)`,
    loadAverage: loadavg(),
    bundleBytes: bundle.bytes,
    bundlePackages: packages.slice(0, 20),
    largestInputs: largestInputs(bundle.metafile, 20),
    spreads,
  });
} finally {
  await aws.stop();
  rmSync(outdir, { recursive: true, force: true });
}
