// One cold start, in a fresh Node process started by bench/cold-start.ts: imports the built Lambda bundle
// (module evaluation: the SDK, Powertools, config, clients) and invokes its handler twice with batches of
// the same shape. The first invocation pays its setup (tenant Databases, schema compilation, connections,
// credentials); the second is warm. Plain JavaScript, no loader, so only the bundle is measured.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

/**
 * @template T
 * @param {() => Promise<T>} run
 * @returns {Promise<[T, { wallMs: number, cpuMs: number }]>}
 */
async function timed(run) {
  const cpu = process.cpuUsage();
  const start = performance.now();
  const value = await run();
  const wallMs = performance.now() - start;
  const used = process.cpuUsage(cpu);
  return [value, { wallMs, cpuMs: (used.user + used.system) / 1000 }];
}

const [bundlePath, eventsPath] = process.argv.slice(2);
// Node's own start, up to this script's first line (timeOrigin is the process's start).
const bootMs = performance.now();
const events = JSON.parse(readFileSync(eventsPath, 'utf8'));
/** @param {string} requestId */
const context = (requestId) => ({
  functionName: 's3-ingest-cold-start',
  functionVersion: '$LATEST',
  invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:s3-ingest-cold-start',
  memoryLimitInMB: '1024',
  awsRequestId: requestId,
  logGroupName: '/aws/lambda/s3-ingest-cold-start',
  logStreamName: 'cold-start',
  callbackWaitsForEmptyEventLoop: true,
  getRemainingTimeInMillis: () => 60_000,
});

const [module, init] = await timed(() => import(pathToFileURL(bundlePath).href));
const [first, firstInvoke] = await timed(() => module.handler(events[0], context('first')));
const [second, warmInvoke] = await timed(() => module.handler(events[1], context('second')));
const failures = first.batchItemFailures.length + second.batchItemFailures.length;
process.stdout.write(
  `@@cold-start@@${JSON.stringify({ bootMs, init, firstInvoke, warmInvoke, failures, heapUsedBytes: process.memoryUsage().heapUsed })}\n`,
);
// The SDK's keep-alive sockets would hold the process open.
process.exit(0);
