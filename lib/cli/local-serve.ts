import type { InvocationSummary } from '../ingest/handler/ingest-handler.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../local/emulators/local-aws.js';
import type { InvocationResult } from '../local/lambda/event-source-runner.js';
import { type LocalPipelineOptions, startLocalPipeline } from '../local/lambda/local-pipeline.js';
import { type CliIo, EXIT } from './io.js';
import { DASHBOARD_READY, type DashboardWiring } from './local-dashboard.js';

/** The line `s3-ingest local --serve` prints once everything is up (what scripts and tests wait for). */
export const SERVE_READY = 'ready: sending to';

/**
 * How to run this CLI from a shell: the installed bin, or, in the source tree, its npm script, which runs on
 * the project's own Node (npm puts `node_modules/.bin`, and so the pinned `node`, first on the PATH) whatever
 * `node` the shell would find first.
 */
function cliCommand(): string {
  return import.meta.url.endsWith('.ts') ? 'npm run -s s3-ingest --' : 's3-ingest';
}

/** Single-quoted for POSIX shells. */
function quote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** One line per invocation: what the runner saw, and what the handler did when it returned. */
export function invocationLine(n: number, result: InvocationResult, summary?: InvocationSummary): string {
  const head = `invocation ${n}: ${result.messageIds.length} records, ${result.deleted} acknowledged, ${result.failedMessageIds.length} to redeliver, ${Math.round(result.durationMs)} ms`;
  if (summary === undefined)
    return `${head} (${result.outcome}${result.failure ? `: ${result.failure}` : ''})`;
  const splits = (split: Readonly<Record<string, number>>) =>
    Object.entries(split)
      .map(([key, count]) => `${key} ${count}`)
      .join(', ');
  const rejected = splits(summary.splits.RecordsRejected);
  const redelivered = splits(summary.splits.RecordsRedelivered);
  return [
    head,
    `written ${summary.RecordsProcessed}`,
    `dead-lettered ${summary.RecordsDeadLettered}${rejected ? ` (${rejected})` : ''}`,
    ...(redelivered ? [`redelivered by cause: ${redelivered}`] : []),
    `S3 writes ${summary.Writes}`,
  ].join(' | ');
}

/**
 * `s3-ingest local --serve`: the embedded stack and the event-source runner with the real handler, no demo
 * load. Prints the endpoints and ready-to-paste command lines, then one line per invocation, until SIGINT
 * or SIGTERM, which stop the runner (nothing received is lost), the containers and the stack.
 */
export async function serveLocal(
  io: CliIo,
  options: Omit<LocalPipelineOptions, 'onInvocation'>,
  dashboard?: DashboardWiring,
): Promise<number> {
  let invocations = 0;
  const pipeline = await startLocalPipeline({
    ...options,
    ...(dashboard === undefined ? {} : { metricLines: dashboard.metricLines }),
    onInvocation: (result, summary) => {
      invocations++;
      dashboard?.recordInvocation(result);
      io.stdout.write(`${invocationLine(invocations, result, summary)}\n`);
    },
  });
  const page = await dashboard?.start(pipeline).catch(async (error: unknown) => {
    await pipeline.stop();
    throw error;
  });
  const signal = await untilStopSignal(() => {
    if (page !== undefined) io.stdout.write(`${DASHBOARD_READY} ${page.url}\n`);
    printReady(io, pipeline.aws.endpoints, pipeline.resources, options.resources);
  });
  io.stdout.write(`stopping (${signal})...\n`);
  await page?.stop();
  const stats = await pipeline.stop();
  io.stdout.write(
    `stopped: ${stats.invocations} invocations, ${stats.received} records received, ${stats.deleted} acknowledged\n`,
  );
  return EXIT.ok;
}

/** Resolves with the first SIGINT or SIGTERM; `listening` runs once both are caught. */
export function untilStopSignal(listening: () => void = () => {}): Promise<NodeJS.Signals> {
  return new Promise<NodeJS.Signals>((resolve) => {
    const stopOn = (name: NodeJS.Signals) => {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
      resolve(name);
    };
    const onInt = () => stopOn('SIGINT');
    const onTerm = () => stopOn('SIGTERM');
    process.once('SIGINT', onInt);
    process.once('SIGTERM', onTerm);
    listening();
  });
}

function printReady(
  io: CliIo,
  endpoints: { s3: string; sqs: string; dynamodb: string },
  resources: { bucket: string; queueUrl: string; dlqUrl: string; tableName: string },
  schemas: Readonly<Record<string, unknown>>,
): void {
  const cli = cliCommand();
  const lines = [
    's3-ingest local --serve: the pipeline is running (Ctrl-C to stop)',
    `  queue     ${resources.queueUrl}`,
    `  dlq       ${resources.dlqUrl}`,
    `  bucket    ${resources.bucket}    semaphore table ${resources.tableName}`,
    `  S3 ${endpoints.s3}    SQS ${endpoints.sqs}    DynamoDB ${endpoints.dynamodb}`,
    `  resources ${Object.keys(schemas).join(', ')}`,
    '',
    `# in another shell${import.meta.url.endsWith('.ts') ? ` (from ${process.cwd()})` : ''}:`,
    // Enough for a plain SDK v3 client (`new SQSClient({})`) and for the README's library examples.
    `export AWS_ENDPOINT_URL_S3=${endpoints.s3} AWS_ENDPOINT_URL_SQS=${endpoints.sqs} AWS_ENDPOINT_URL_DYNAMODB=${endpoints.dynamodb} AWS_REGION=${LOCAL_REGION} AWS_ACCESS_KEY_ID=${LOCAL_CREDENTIALS.accessKeyId} AWS_SECRET_ACCESS_KEY=${LOCAL_CREDENTIALS.secretAccessKey} QUEUE_URL=${resources.queueUrl} DLQ_URL=${resources.dlqUrl} BUCKET_NAME=${resources.bucket} SEMAPHORE_TABLE=${resources.tableName} RESOURCES=${quote(JSON.stringify(schemas))}`,
    `${cli} send --queue-url ${resources.queueUrl} writes.ndjson`,
    `${cli} inspect --bucket ${resources.bucket} --queue-url ${resources.queueUrl} --dlq-url ${resources.dlqUrl}`,
    `${cli} dlq peek --dlq-url ${resources.dlqUrl}`,
    '',
    `${SERVE_READY} ${resources.queueUrl}`,
  ];
  io.stdout.write(`${lines.join('\n')}\n`);
}
