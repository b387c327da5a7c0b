// Runs in a worker thread so a regex that backtracks for minutes blocks this thread only: the test's thread
// stays free to notice and terminate it.
import { parentPort, workerData } from 'node:worker_threads';
import { openDatabase } from '../../../../lib/db/open-database.js';
import type { JsonSchema } from '../../../../lib/db/schema.js';
import { loadConfig } from '../../../../lib/ingest/config.js';
import { ConfigError } from '../../../../lib/ingest/errors.js';

/** What the worker reports: the config was refused at load, or one record was validated (and how). */
export type SchemaWorkerResult =
  | { readonly refusedKey: string; readonly detail: string }
  | { readonly validated: 'accepted' | string };

export interface SchemaWorkerInput {
  readonly resources: Record<string, unknown>;
  readonly resource: string;
  readonly data: Record<string, unknown>;
}

async function run(input: SchemaWorkerInput): Promise<SchemaWorkerResult> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig({
      BUCKET_NAME: 'records',
      DLQ_URL: 'http://127.0.0.1:1/000000000000/dlq',
      RESOURCES: JSON.stringify(input.resources),
    });
  } catch (err) {
    if (err instanceof ConfigError) return { refusedKey: err.key, detail: err.detail };
    throw err;
  }
  // The same path as the handler's tenants: a Database declaring the configured schema, then one write.
  const db = openDatabase('memory://records', { tenant: 'acme' });
  try {
    const schema = config.resources[input.resource] as JsonSchema;
    const resource = await db.createResource({ name: input.resource, schema });
    try {
      await resource.insert(input.data);
      return { validated: 'accepted' };
    } catch (err) {
      return { validated: err instanceof Error ? err.name : String(err) };
    }
  } finally {
    await db.disconnect();
  }
}

run(workerData as SchemaWorkerInput).then(
  (result) => parentPort?.postMessage(result),
  (err: unknown) => {
    throw err;
  },
);
