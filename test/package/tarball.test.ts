import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateQueueCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localClientConfig } from '../support/local-aws.js';

// The package as a producer service meets it: `npm pack`, install the tarball into a scratch project with
// no dev dependencies, then import, type-check, run the bin and send through the embedded SQS from there.

const ROOT = join(import.meta.dirname, '..', '..');
const NODE = process.execPath;
const NPM_ENV = {
  ...process.env,
  npm_config_audit: 'false',
  npm_config_fund: 'false',
  npm_config_loglevel: 'error',
};

let scratch: string;
let files: string[];

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = NPM_ENV): string {
  return execFileSync(command, args, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** The optional peers at the versions package.json pins. */
function pinnedPeers(names: readonly string[]): string[] {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    peerDependencies: Record<string, string>;
  };
  return names.map((name) => `${name}@${pkg.peerDependencies[name]}`);
}

function bin(cwd: string, args: string[]) {
  return spawnSync('npx', ['--no-install', 's3-ingest', ...args], {
    cwd,
    encoding: 'utf8',
    env: NPM_ENV,
    timeout: 60_000,
  });
}

/** Type-checks `file` of the scratch project `app` (strict, NodeNext), as a consumer's build would. */
function typeCheck(app: string, file: string): { output: string; status: number | null } {
  writeFileSync(
    join(app, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        target: 'ES2022',
        strict: true,
        noEmit: true,
        // A Node service has @types/node; the scratch project borrows the repo's instead of installing it.
        typeRoots: [join(ROOT, 'node_modules', '@types')],
        types: ['node'],
      },
      files: [file],
    }),
  );
  const tsc = spawnSync(NODE, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', app], {
    encoding: 'utf8',
  });
  return { output: tsc.stdout + tsc.stderr, status: tsc.status };
}

let bare: string;
let ingestApp: string;
let semaphoreApp: string;
let localApp: string;

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 's3-ingest-consumer-'));
  const packDir = join(scratch, 'pack');
  mkdirSync(packDir);
  // prepack builds dist/ first, as `npm publish` would.
  const packed = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', packDir], ROOT)) as Array<{
    filename: string;
    files: Array<{ path: string }>;
  }>;
  const tarball = join(packDir, (packed[0] as { filename: string }).filename);
  files = (packed[0] as { files: Array<{ path: string }> }).files.map((f) => f.path);
  /** A consumer project named `name`: the tarball plus `peers` (pinned as package.json pins them), nothing else. */
  const project = (name: string, peers: readonly string[]): string => {
    const dir = join(scratch, name);
    mkdirSync(dir);
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({ name: `${name}-consumer`, private: true, type: 'module' }),
    );
    run(
      'npm',
      ['install', '--omit=dev', '--prefer-offline', '--no-package-lock', tarball, ...pinnedPeers(peers)],
      dir,
    );
    return dir;
  };
  // A producer: no optional peers.
  bare = project('app', []);
  // A Lambda-side project: exactly the peers the README lists for s3-ingest/ingest.
  ingestApp = project('ingest', [
    '@aws-sdk/client-s3',
    '@smithy/core',
    '@smithy/node-http-handler',
    'undici',
    'ajv',
    'ajv-formats',
    're2js',
    '@aws-sdk/client-dynamodb',
    'lru-cache',
    '@aws-lambda-powertools/logger',
    '@aws-lambda-powertools/metrics',
  ]);
  // A service booking a prefix's writes: the one peer the README lists for s3-ingest/semaphore.
  semaphoreApp = project('semaphore', ['@aws-sdk/client-dynamodb']);
  // A test suite on the embedded stack: exactly the peers the README lists for s3-ingest/local.
  localApp = project('local', ['@aws-sdk/client-s3', '@aws-sdk/client-dynamodb', 'fauxqs', 'dynalite']);
}, 300_000);

afterAll(() => {
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

describe('the published package', () => {
  it('ships built JavaScript and declarations, no sources of tests, benches or infra', () => {
    expect(files).toContain('package.json');
    expect(files).toContain('dist/index.js');
    expect(files).toContain('dist/index.d.ts');
    expect(files).toContain('dist/local/index.js');
    const foreign = files.filter(
      (f) => !(f.startsWith('dist/') || f === 'package.json' || f === 'README.md'),
    );
    expect(foreign).toEqual([]);
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    expect(files.filter((f) => f.endsWith('.map'))).toEqual([]);
  });

  it('installs for a producer without the emulators, the S3/DynamoDB clients or the Lambda middleware', () => {
    const installed = readdirSync(join(scratch, 'app', 'node_modules'));
    const scoped = readdirSync(join(scratch, 'app', 'node_modules', '@aws-sdk'));
    expect(installed).toContain('s3-ingest');
    expect(scoped).toContain('client-sqs');
    for (const absent of ['fauxqs', 'dynalite', '@middy', '@aws-lambda-powertools', 'ajv', 'vitest', 'tsx']) {
      expect(installed).not.toContain(absent);
    }
    expect(scoped).not.toContain('client-s3');
    expect(scoped).not.toContain('client-dynamodb');
  });

  it('type-checks a consumer importing Producer and ExecutorPool', () => {
    const app = join(scratch, 'app');
    writeFileSync(
      join(app, 'consumer.ts'),
      [
        "import { SQSClient } from '@aws-sdk/client-sqs';",
        "import { ExecutorPool, Producer, type ProducerWrite } from 's3-ingest';",
        "const write: ProducerWrite = { tenant: 'acme', resource: 'orders', op: 'upsert', id: 'o-1', data: { total: 1 } };",
        "const producer = new Producer({ queueUrl: 'http://localhost/q', client: new SQSClient({}) });",
        'const pool = new ExecutorPool({ concurrency: 4 });',
        'export const sent: Promise<unknown> = pool.enqueue(() => producer.send(write));',
        '// @ts-expect-error: a write needs a tenant',
        "export const bad: ProducerWrite = { resource: 'orders', op: 'delete', id: 'x' };",
      ].join('\n'),
    );
    const tsc = typeCheck(app, 'consumer.ts');
    expect(tsc.output).toBe('');
    expect(tsc.status).toBe(0);
  }, 120_000); // tsc over the SDK's declarations: ~7 s on an idle machine, much more under load

  it('resolves every entry of the exports map to built code (with the optional peers installed)', () => {
    const entries = {
      '.': 'Producer',
      './ingest': 'createIngestHandler',
      './db': 'Database',
      './semaphore': 'DynamoRateBudget',
      './local': 'startLocalAws',
    };
    const script = Object.entries(entries)
      .map(
        ([entry, name]) =>
          `if (typeof (await import('s3-ingest${entry.slice(1)}')).${name} !== 'function') throw new Error('${entry} lacks ${name}');`,
      )
      .join('\n');
    // The repository has every peer as a devDependency; a package may import itself by name through `exports`.
    const result = spawnSync(NODE, ['--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it('runs the s3-ingest bin', () => {
    const help = bin(bare, ['--help']);
    expect(help.stderr).toBe('');
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/Usage: s3-ingest <command>/);
  });

  it('imports Producer from the installed package and sends through the embedded SQS', async () => {
    const sqs = new SQSClient(localClientConfig('sqs'));
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: `tarball-${Date.now()}` }));
    const app = join(scratch, 'app');
    writeFileSync(
      join(app, 'send.mjs'),
      [
        "import { SQSClient } from '@aws-sdk/client-sqs';",
        "import { Producer } from 's3-ingest';",
        'const [endpoint, queueUrl] = process.argv.slice(2);',
        "const client = new SQSClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });",
        'const producer = new Producer({ queueUrl, client });',
        "const result = await producer.send({ tenant: 'acme', resource: 'orders', op: 'upsert', id: 'o-1', data: { total: 42 } });",
        'console.log(JSON.stringify(result));',
      ].join('\n'),
    );
    const sent = spawnSync(NODE, ['send.mjs', localClientConfig('sqs').endpoint, QueueUrl as string], {
      cwd: app,
      encoding: 'utf8',
    });
    expect(sent.stderr).toBe('');
    expect(sent.status).toBe(0);
    const received = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    expect(received.Messages).toHaveLength(1);
    expect(JSON.parse(received.Messages?.[0]?.Body ?? '{}')).toMatchObject({
      v: 1,
      tenant: 'acme',
      id: 'o-1',
      data: { total: 42 },
    });
    sqs.destroy();
  });
});

describe('the bin in a producer project (no optional peers)', () => {
  it('`s3-ingest send --help` works: the README says send "needs nothing more"', () => {
    const r = bin(bare, ['send', '--help']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/Usage: s3-ingest send/);
  });

  it('`s3-ingest dlq --help` works: the dlq commands only talk to SQS', () => {
    const r = bin(bare, ['dlq', '--help']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('`s3-ingest local` fails naming the emulators to install, without a stack trace', () => {
    const r = bin(bare, ['local']);
    expect(r.status).not.toBe(0);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(r.stderr).toMatch(/fauxqs/);
    expect(r.stderr).toMatch(/dynalite/);
  });
});

describe('entry points with the peers the README lists', () => {
  it('s3-ingest/ingest imports with the peers the README lists installed', () => {
    const r = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "const m = await import('s3-ingest/ingest'); if (typeof m.createIngestHandler !== 'function') process.exit(3);",
      ],
      { cwd: ingestApp, encoding: 'utf8' },
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });
});

describe('s3-ingest/local with the peers the README lists', () => {
  it('starts the embedded stack, provisions it and answers on it', () => {
    writeFileSync(
      join(localApp, 'stack.mjs'),
      [
        "import { HeadBucketCommand, S3Client } from '@aws-sdk/client-s3';",
        "import { ListQueuesCommand, SQSClient } from '@aws-sdk/client-sqs';",
        "import { provisionLocal, startLocalAws } from 's3-ingest/local';",
        'const aws = await startLocalAws();',
        'try {',
        '  const resources = await provisionLocal({ endpoints: aws.endpoints });',
        '  const s3 = new S3Client(aws.clientConfig.s3);',
        '  const sqs = new SQSClient(aws.clientConfig.sqs);',
        '  await s3.send(new HeadBucketCommand({ Bucket: resources.bucket }));',
        '  const { QueueUrls = [] } = await sqs.send(new ListQueuesCommand({}));',
        '  s3.destroy();',
        '  sqs.destroy();',
        '  console.log(JSON.stringify({ queues: QueueUrls.includes(resources.queueUrl), table: resources.tableName }));',
        '} finally {',
        '  await aws.stop();',
        '}',
      ].join('\n'),
    );
    const ran = spawnSync(NODE, ['stack.mjs'], { cwd: localApp, encoding: 'utf8', timeout: 60_000 });
    expect(ran.stderr).toBe('');
    expect(ran.status).toBe(0);
    const { queues, table } = JSON.parse(ran.stdout) as { queues: boolean; table: string };
    expect(queues).toBe(true);
    expect(table.length).toBeGreaterThan(0);
  });
});

describe('s3-ingest/semaphore with the one peer the README lists', () => {
  it('books and reports as the README shows: MemoryRateBudget in one process, DynamoRateBudget on DynamoDB', () => {
    writeFileSync(
      join(semaphoreApp, 'budget.mjs'),
      [
        "import { DynamoDBClient } from '@aws-sdk/client-dynamodb';",
        "import { DynamoRateBudget, MemoryBudgetTable, MemoryRateBudget, SemaphoreTimeoutError } from 's3-ingest/semaphore';",
        'const [endpoint, tableName] = process.argv.slice(2);',
        "const name = 'prefix:my-bucket/t=acme/';",
        'const slots = ({ rate, startAt, endsAt, writes, queued }) => ({ rate, startAt, endsAt, writes, queued });',
        '// Two budgets on one table share a schedule, as two processes on one DynamoDB table do.',
        'const table = new MemoryBudgetTable();',
        'const a = new MemoryRateBudget({ name, ceiling: 100, table });',
        'const b = new MemoryRateBudget({ name, ceiling: 100, table });',
        'let now = Date.now();',
        'const first = await a.book({ writes: 50, latestStart: now + 1_000, writeBy: now + 10_000 });',
        'const second = await b.book({ writes: 10, latestStart: now + 1_000, writeBy: now + 10_000 });',
        'await first.report({ accepted: 50, throttled: 0, starved: first.queued });',
        "const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });",
        'await DynamoRateBudget.createTable(client, tableName);',
        'const budget = new DynamoRateBudget({ client, tableName, name, ceiling: 100 });',
        'now = Date.now();',
        'const booking = await budget.book({ writes: 40, latestStart: now + 1_000, writeBy: now + 10_000 });',
        '// Half of its writes were refused (S3 SlowDown): the budget halves.',
        'await booking.report({ accepted: 20, throttled: 20, starved: booking.queued });',
        'now = Date.now();',
        'const after = await budget.book({ writes: 500, latestStart: now + 10_000, writeBy: now + 60_000 });',
        'const refusal = await budget',
        '  .book({ writes: 1, latestStart: Date.now() + 1_000, writeBy: Date.now() + 60_000 })',
        '  .then(() => undefined, (err) => ({ typed: err instanceof SemaphoreTimeoutError, name: err.name, freeAt: err.freeAt }));',
        'client.destroy();',
        'console.log(JSON.stringify({ memory: [slots(first), slots(second)], dynamo: [slots(booking), slots(after)], refusal }));',
      ].join('\n'),
    );
    const ran = spawnSync(
      NODE,
      ['budget.mjs', localClientConfig('dynamodb').endpoint, `tarball-${Date.now()}`],
      { cwd: semaphoreApp, encoding: 'utf8', timeout: 60_000 },
    );
    expect(ran.stderr).toBe('');
    expect(ran.status).toBe(0);
    const { memory, dynamo, refusal } = JSON.parse(ran.stdout) as {
      memory: { rate: number; startAt: number; endsAt: number; writes: number; queued: boolean }[];
      dynamo: { rate: number; startAt: number; endsAt: number; writes: number; queued: boolean }[];
      refusal?: { typed: boolean; name: string; freeAt: number };
    };
    // 50 slots at 100/s take 500 ms; the other budget's 10 follow them, queued.
    expect(memory[0]).toMatchObject({ rate: 100, writes: 50, queued: false });
    expect(memory[0]!.endsAt - memory[0]!.startAt).toBe(500);
    expect(memory[1]).toMatchObject({ rate: 100, writes: 10, startAt: memory[0]!.endsAt, queued: true });
    // The report halved the DynamoDB budget: the next booking's slots are spaced at 50/s, after the first's.
    expect(dynamo[0]).toMatchObject({ rate: 100, writes: 40 });
    expect(dynamo[1]).toMatchObject({ rate: 50, writes: 500 });
    expect(dynamo[1]!.endsAt - dynamo[1]!.startAt).toBe(10_000);
    expect(dynamo[1]!.startAt).toBeGreaterThanOrEqual(dynamo[0]!.endsAt);
    // Booked 10 s ahead: a booking that must start within 1 s is refused at once, told when the schedule frees.
    expect(refusal).toEqual({ typed: true, name: 'SemaphoreTimeoutError', freeAt: dynamo[1]!.endsAt });
  });

  it('type-checks a consumer booking and reporting through the exported types', () => {
    writeFileSync(
      join(semaphoreApp, 'consumer.ts'),
      [
        "import { DynamoDBClient } from '@aws-sdk/client-dynamodb';",
        "import { DynamoRateBudget, type RateBooking, type RateBudget, type WriteRound } from 's3-ingest/semaphore';",
        "const budget: RateBudget = new DynamoRateBudget({ client: new DynamoDBClient({}), tableName: 'semaphores', name: 'prefix:b/t=acme/', ceiling: 3500 });",
        'const now = Date.now();',
        'export const booked: Promise<RateBooking> = budget.book({ writes: 40, latestStart: now + 1_000, writeBy: now + 10_000 });',
        'export const round: WriteRound = { accepted: 40, throttled: 0, starved: false };',
        'export const reported: Promise<void> = booked.then((booking) => booking.report(round));',
        '// @ts-expect-error: a booking needs the time its writes must be done by',
        'export const bad = budget.book({ writes: 40, latestStart: now });',
      ].join('\n'),
    );
    const tsc = typeCheck(semaphoreApp, 'consumer.ts');
    expect(tsc.output).toBe('');
    expect(tsc.status).toBe(0);
  }, 120_000);
});
