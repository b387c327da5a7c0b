import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { loadConfig } from '../lib/ingest/config.js';
import { createIngestHandler } from '../lib/ingest/handler/ingest-handler.js';

// Cold start: parse the config once (a bad key fails the init with a ConfigError naming it) and build the
// clients, the tenant Database cache and the prefixes' rate budgets, shared by every warm invocation.
const logger = new Logger();
const metrics = new Metrics();
const ingest = createIngestHandler(loadConfig(process.env), { logger, metrics, flushMetrics: false });

/**
 * The SQS-triggered ingestion Lambda. Imports lib/ingest directly (not lib/index.ts) so the bundle holds
 * only what the handler runs. Powertools' BatchProcessor is not used: per-record ordering and per-tenant
 * slot bookings need the whole batch planned at once, and the handler builds `batchItemFailures` itself (so a
 * batch where everything failed is never acknowledged by accident).
 */
export const handler = middy<SQSEvent, SQSBatchResponse, Error, Context>()
  .handler((event: SQSEvent, context: Context) => ingest(event, context))
  .use(injectLambdaContext(logger))
  .use(logMetrics(metrics, { captureColdStartMetric: true, throwOnEmptyMetrics: false }));
