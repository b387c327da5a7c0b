import { afterEach, describe, expect, it } from 'vitest';
import { createIngestHandler, type IngestHandler } from '../../../lib/ingest/handler/ingest-handler.js';
import type { LocalResources } from '../../../lib/local/emulators/provision.js';
import {
  body,
  failedIds,
  lambdaContext,
  quietMetrics,
  silentLogger,
  sqsEvent,
} from '../../unit/ingest/handler/support.js';
import { provisionFresh, stackConfig, useTestCredentials } from './emulated-stack.js';

const handlers: IngestHandler[] = [];

useTestCredentials();
afterEach(async () => {
  await Promise.all(handlers.splice(0).map((h) => h.close()));
});

function deploy(r: LocalResources, rate: number): IngestHandler {
  const handler = createIngestHandler(
    stackConfig(r, { S3_PREFIX_WRITE_RATE: String(rate), WRITE_TIMEOUT_MS: '1000' }),
    { logger: silentLogger(), metrics: quietMetrics() },
  );
  handlers.push(handler);
  return handler;
}

const batch = (from: number) =>
  sqsEvent(Array.from({ length: 12 }, (_, i) => body({ tenant: 'acme', id: `o-${from + i}` })));

describe('a redeploy with another S3_PREFIX_WRITE_RATE', () => {
  it('keeps writing, for a smaller and then a larger limit, with no manual step', async () => {
    const r = await provisionFresh('rate');
    for (const [i, rate] of [3500, 1000, 5000].entries()) {
      const response = await deploy(r, rate)(batch(i * 100), lambdaContext(10_000));
      expect(failedIds(response)).toEqual([]);
    }
  });
});
