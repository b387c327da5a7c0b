import { parseArgs } from 'node:util';
import { InvalidLocalOptionError } from '../errors.js';
import type { S3BehaviourOptions } from '../s3-behaviour/s3-behaviour-model.js';

/** What `npm run local -- <flags>` asked for. */
export interface ServeOptions {
  /** Base port (fauxqs, dynalite at +1, chaos proxy at +2). 0 = any free ports. */
  port: number;
  /** Chaos proxy settings; undefined when no chaos flag was given. */
  chaos?: S3BehaviourOptions;
  bucket?: string;
  queueName?: string;
  tableName?: string;
  help: boolean;
}

export const SERVE_USAGE = `Usage: npm run local -- [options]

Starts fauxqs (SQS + S3) and dynalite (DynamoDB) on 127.0.0.1, provisions the bucket, the ingest queue with
its DLQ and the semaphore table, prints the endpoints, and runs until Ctrl-C.

  --port N             base port: S3/SQS on N, DynamoDB on N+1, chaos proxy on N+2 (default: any free)
  --bucket NAME        default s3-ingest-local
  --queue NAME         default s3-ingest-local-ingest (DLQ: <queue>-dlq)
  --table NAME         default s3-ingest-local-semaphore

Chaos (any of these puts the chaos proxy in front of S3 and prints it as the S3 endpoint):
  --chaos              enable with S3's own limits and no faults
  --write-rate N       writes/s per prefix (default 3500)
  --read-rate N        reads/s per prefix (default 5500)
  --burst-seconds S    token bucket capacity in seconds of rate (default 0.1)
  --latency-median MS  lognormal latency median (needs --latency-p99)
  --latency-p99 MS     lognormal latency 99th percentile
  --error-rate P       probability of 500 InternalError (0..1)
  --reset-rate P       probability of a connection reset (0..1)
  --slowdown-rate P    probability of 503 SlowDown on any request, on top of the rate limits (0..1)
  --stall-rate P       probability of a stalled response (0..1)
  --stall-ms MS        how long a stall lasts (default 600000)
  --seed N             PRNG seed (default 1)
`;

function number(flag: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (raw.trim() === '' || Number.isNaN(value))
    throw new InvalidLocalOptionError(`--${flag}`, `not a number: ${raw}`);
  return value;
}

/** Parses `npm run local` flags; bad values throw `InvalidLocalOptionError` naming the flag. */
export function parseServeArgs(argv: string[]): ServeOptions {
  const stringFlags = [
    'port',
    'bucket',
    'queue',
    'table',
    'write-rate',
    'read-rate',
    'burst-seconds',
    'latency-median',
    'latency-p99',
    'error-rate',
    'reset-rate',
    'slowdown-rate',
    'stall-rate',
    'stall-ms',
    'seed',
  ] as const;
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        ...Object.fromEntries(stringFlags.map((flag) => [flag, { type: 'string' as const }])),
        chaos: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    throw new InvalidLocalOptionError('argv', (error as Error).message);
  }
  const str = (flag: string) => values[flag] as string | undefined;

  const port = number('port', str('port')) ?? 0;
  const median = number('latency-median', str('latency-median'));
  const p99 = number('latency-p99', str('latency-p99'));
  if ((median === undefined) !== (p99 === undefined)) {
    throw new InvalidLocalOptionError('--latency-median', 'give both --latency-median and --latency-p99');
  }
  const chaosSettings: S3BehaviourOptions = {};
  const set = <K extends keyof S3BehaviourOptions>(key: K, value: S3BehaviourOptions[K] | undefined) => {
    if (value !== undefined) chaosSettings[key] = value;
  };
  set('writesPerSecond', number('write-rate', str('write-rate')));
  set('readsPerSecond', number('read-rate', str('read-rate')));
  set('burstSeconds', number('burst-seconds', str('burst-seconds')));
  set('seed', number('seed', str('seed')));
  if (median !== undefined && p99 !== undefined) chaosSettings.latency = { medianMs: median, p99Ms: p99 };
  const faults: NonNullable<S3BehaviourOptions['faults']> = {};
  const internalErrorRate = number('error-rate', str('error-rate'));
  const resetRate = number('reset-rate', str('reset-rate'));
  const stallRate = number('stall-rate', str('stall-rate'));
  const stallMs = number('stall-ms', str('stall-ms'));
  const slowDownRate = number('slowdown-rate', str('slowdown-rate'));
  if (slowDownRate !== undefined) faults.slowDownRate = slowDownRate;
  if (internalErrorRate !== undefined) faults.internalErrorRate = internalErrorRate;
  if (resetRate !== undefined) faults.resetRate = resetRate;
  if (stallRate !== undefined) faults.stallRate = stallRate;
  if (stallMs !== undefined) faults.stallMs = stallMs;
  if (Object.keys(faults).length > 0) chaosSettings.faults = faults;
  const chaos = values.chaos === true || Object.keys(chaosSettings).length > 0 ? chaosSettings : undefined;

  const options: ServeOptions = { port, help: values.help === true };
  if (chaos !== undefined) options.chaos = chaos;
  const bucket = str('bucket');
  const queueName = str('queue');
  const tableName = str('table');
  if (bucket !== undefined) options.bucket = bucket;
  if (queueName !== undefined) options.queueName = queueName;
  if (tableName !== undefined) options.tableName = tableName;
  return options;
}
