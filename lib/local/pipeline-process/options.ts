import { parseArgs } from 'node:util';
import { InvalidLocalOptionError } from '../errors.js';

/**
 * How one pipeline process runs its event source mapping. The handler itself is configured by the ingest
 * environment (`loadConfig(process.env)`: BUCKET_NAME, DLQ_URL, SEMAPHORE_TABLE, endpoints, ...).
 */
export interface PipelineProcessOptions {
  /** The ingestion queue to poll. Required. */
  queueUrl: string;
  /** NDJSON event log, appended synchronously line by line so it survives SIGKILL. Required. */
  logFile: string;
  /** Records per invocation. Default 10. */
  batchSize?: number;
  /** Batching window in ms (needed above 10 records). Default 0. */
  batchingWindowMs?: number;
  /** Invocations at once (one Lambda container each). Default 3. */
  concurrency?: number;
  /** Function timeout in ms. Default 5,000. */
  functionTimeoutMs?: number;
  /** Visibility timeout of every receive in s; must cover `functionTimeoutMs`. Default 5. */
  visibilityTimeoutSeconds?: number;
  /** Long-poll wait of each receive in s. Default 1 (short, so a SIGTERM stop is quick). */
  waitTimeSeconds?: number;
}

export type ResolvedPipelineProcessOptions = Required<PipelineProcessOptions>;

const FLAGS = {
  queueUrl: 'queue-url',
  logFile: 'log',
  batchSize: 'batch-size',
  batchingWindowMs: 'batching-window-ms',
  concurrency: 'concurrency',
  functionTimeoutMs: 'function-timeout-ms',
  visibilityTimeoutSeconds: 'visibility-timeout-s',
  waitTimeSeconds: 'wait-time-s',
} as const satisfies Record<keyof PipelineProcessOptions, string>;

const DEFAULTS = {
  batchSize: 10,
  batchingWindowMs: 0,
  concurrency: 3,
  functionTimeoutMs: 5_000,
  visibilityTimeoutSeconds: 5,
  waitTimeSeconds: 1,
} as const;

/** The command-line arguments that make `pipeline-process/main.ts` run with `options`. */
export function pipelineProcessArgs(options: PipelineProcessOptions): string[] {
  const args: string[] = [];
  for (const [key, flag] of Object.entries(FLAGS) as [keyof PipelineProcessOptions, string][]) {
    const value = options[key];
    if (value !== undefined) args.push(`--${flag}`, String(value));
  }
  return args;
}

function integer(flag: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value)) {
    throw new InvalidLocalOptionError(`--${flag}`, `expected a non-negative integer, got ${raw}`);
  }
  return value;
}

/** Parses what `pipelineProcessArgs` produced; throws `InvalidLocalOptionError` naming the flag. */
export function parsePipelineProcessArgs(argv: string[]): ResolvedPipelineProcessOptions {
  const { values } = parseArgs({
    args: argv,
    options: Object.fromEntries(Object.values(FLAGS).map((flag) => [flag, { type: 'string' }])) as Record<
      string,
      { type: 'string' }
    >,
  });
  const text = values as Record<string, string | undefined>;
  const queueUrl = text[FLAGS.queueUrl];
  const logFile = text[FLAGS.logFile];
  if (queueUrl === undefined) throw new InvalidLocalOptionError(`--${FLAGS.queueUrl}`, 'required');
  if (logFile === undefined) throw new InvalidLocalOptionError(`--${FLAGS.logFile}`, 'required');
  const number = (key: keyof typeof DEFAULTS) => integer(FLAGS[key], text[FLAGS[key]], DEFAULTS[key]);
  return {
    queueUrl,
    logFile,
    batchSize: number('batchSize'),
    batchingWindowMs: number('batchingWindowMs'),
    concurrency: number('concurrency'),
    functionTimeoutMs: number('functionTimeoutMs'),
    visibilityTimeoutSeconds: number('visibilityTimeoutSeconds'),
    waitTimeSeconds: number('waitTimeSeconds'),
  };
}
