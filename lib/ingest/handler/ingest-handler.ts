import { setMaxListeners } from 'node:events';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type { Database } from '../../db/database.js';
import type { ObjectStore } from '../../db/object-store.js';
import { ConcurrencyBudget } from '../../pool/concurrency-budget.js';
import type { IngestConfig } from '../config.js';
import { InvalidMessageError } from '../errors.js';
import { parseIngestMessage } from '../message/parse.js';
import type { IngestWrite } from '../message/types.js';
import type { IngestMetricName } from '../metric-names.js';
import { applyWrite } from './apply-write.js';
import { type AwsClients, createAwsClients } from './aws-clients.js';
import { type DeadLetter, DeadLetterQueue } from './dead-letter-queue.js';
import { InvocationMetrics } from './invocation-metrics.js';
import { type TenantDatabase, TenantDatabases } from './tenant-databases.js';
import { type SemaphoreFactory, TenantPermits } from './tenant-permits.js';
import type { WriteOutcome } from './write-outcome.js';

export interface IngestHandlerOptions {
  /** Clients to use instead of the ones built from the config (one set per container). */
  readonly clients?: Partial<AwsClients>;
  /** Default: a Powertools Logger for the service in `POWERTOOLS_SERVICE_NAME`. */
  readonly logger?: Logger;
  /** Default: a Powertools Metrics instance (namespace and service from the Powertools environment). */
  readonly metrics?: Metrics;
  /**
   * Publish the stored metrics at the end of every invocation. Default `true`; the Lambda entry point sets
   * `false` because its `logMetrics` middleware publishes (and adds the cold-start metric).
   */
  readonly flushMetrics?: boolean;
  /** Storage instead of S3 (tests run the handler on an in-process store with enforced conditional writes). */
  readonly store?: ObjectStore;
  /** Semaphores instead of DynamoDB ones (tests use `MemorySemaphore`). */
  readonly semaphores?: SemaphoreFactory;
  /** Called after every invocation with what it did (the local runner's summary, tests). */
  readonly onInvocation?: (summary: InvocationSummary) => void;
}

/** What one invocation did: the published metrics plus context. */
export type InvocationSummary = Record<IngestMetricName, number> & {
  readonly records: number;
  readonly tenants: number;
  readonly durationMs: number;
  readonly deadlineReached: boolean;
};

/** The ingestion Lambda: an SQS batch in, the records SQS must redeliver out. */
export interface IngestHandler {
  (event: SQSEvent, context: Context): Promise<SQSBatchResponse>;
  /** Drains and disconnects the cached tenant Databases (local runner shutdown, tests). */
  close(): Promise<void>;
}

interface TenantWork {
  readonly tenant: string;
  readonly writes: IngestWrite[];
}

const RECORD_SEPARATOR = '\u0000';

/**
 * Builds the handler once per container (cold start): clients, the tenant Database cache, the invocation
 * budget and the permit planner are shared by every warm invocation.
 *
 * Per invocation: parse every record against contract v1; dead-letter the invalid ones at once; group the
 * rest by tenant; under each tenant prefix's permits, apply writes through that tenant's own pool, writes to
 * one record in message order and different records concurrently; stop starting writes (and abort in-flight
 * ones) when the remaining time falls under `DEADLINE_MARGIN_MS`; return every transient failure, and only
 * those, in `batchItemFailures`. Records are acknowledged only once written or safely in the DLQ.
 */
export function createIngestHandler(config: IngestConfig, options: IngestHandlerOptions = {}): IngestHandler {
  const clients = createAwsClients(config, options.clients);
  const logger = options.logger ?? new Logger();
  const metrics = options.metrics ?? new Metrics();
  const flushMetrics = options.flushMetrics ?? true;
  const budget = new ConcurrencyBudget(config.poolConcurrency);
  const databases = new TenantDatabases({
    config,
    s3: clients.s3,
    budget,
    ...(options.store === undefined ? {} : { store: options.store }),
  });
  const permits = new TenantPermits(config, clients.dynamodb, options.semaphores);
  const deadLetters = new DeadLetterQueue(clients.sqs, config.dlqUrl);

  const handler = async (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
    const startedAt = Date.now();
    const remainingMs = context.getRemainingTimeInMillis();
    const cutoff = startedAt + remainingMs - config.deadlineMarginMs;
    const deadline = new AbortController();
    // Every queued or running write listens to the deadline: hundreds of listeners are expected, not a leak.
    setMaxListeners(0, deadline.signal);
    const deadlineReached = () => deadline.abort(new Error('invocation deadline margin reached'));
    // Already inside the margin: abort now, not on a timer tick, which would fire only after the writes
    // had been started (they start synchronously once permits are held).
    if (cutoff <= startedAt) deadlineReached();
    const timer = setTimeout(deadlineReached, Math.max(0, cutoff - startedAt));
    const invocation = new InvocationMetrics();
    const outcomes = new Map<string, WriteOutcome>();
    const letters: DeadLetter[] = [];
    const byTenant = new Map<string, TenantWork>();
    const records = event.Records ?? [];
    const bodies = new Map(records.map((r) => [r.messageId, r.body] as const));
    const inUse: TenantDatabase[] = [];

    try {
      for (const record of records) {
        const write = parse(record, config, letters, outcomes);
        if (write === undefined) continue;
        let work = byTenant.get(write.tenant);
        if (work === undefined) {
          work = { tenant: write.tenant, writes: [] };
          byTenant.set(write.tenant, work);
        }
        work.writes.push(write);
      }

      await runTenants([...byTenant.values()]);

      for (const work of byTenant.values()) {
        for (const write of work.writes) {
          const outcome = outcomes.get(write.messageId);
          if (outcome?.kind === 'permanent') {
            letters.push({
              messageId: write.messageId,
              body: bodies.get(write.messageId) ?? '',
              reason: outcome.reason,
              errorName: outcome.error.name,
              detail: outcome.error.message,
              tenant: write.tenant,
            });
          }
        }
      }
      const notDeadLettered = letters.length === 0 ? new Set<string>() : await deadLetters.send(letters);
      for (const letter of letters) {
        if (notDeadLettered.has(letter.messageId)) {
          outcomes.set(letter.messageId, {
            kind: 'transient',
            cause: 'dead-letter-failed',
            error: undefined,
          });
        } else {
          invocation.recordsDeadLettered++;
          logger.warn('message dead-lettered', {
            messageId: letter.messageId,
            tenant: letter.tenant,
            reason: letter.reason,
            errorName: letter.errorName,
            detail: letter.detail,
          });
        }
      }
    } finally {
      clearTimeout(timer);
      invocation.detach();
      for (const entry of inUse.splice(0)) databases.release(entry);
    }

    const batchItemFailures: SQSBatchResponse['batchItemFailures'] = [];
    for (const record of records) {
      const outcome = outcomes.get(record.messageId);
      // A record with no outcome was never reached: redeliver it rather than acknowledge it.
      if (outcome === undefined || outcome.kind === 'transient') {
        batchItemFailures.push({ itemIdentifier: record.messageId });
      } else if (outcome.kind === 'written') {
        invocation.recordsProcessed++;
      }
    }
    invocation.recordsFailed = batchItemFailures.length;
    invocation.writes = invocation.recordsProcessed;

    const tenants = [...byTenant.keys()];
    invocation.addTo(metrics, tenants);
    if (flushMetrics) metrics.publishStoredMetrics();
    const summary: InvocationSummary = {
      records: records.length,
      tenants: tenants.length,
      ...invocation.values(),
      durationMs: Date.now() - startedAt,
      deadlineReached: deadline.signal.aborted,
    };
    logger.info('batch processed', summary);
    options.onInvocation?.(summary);
    return { batchItemFailures };

    async function runTenants(work: TenantWork[]): Promise<void> {
      const ready = new Map<string, { work: TenantWork; tenant: TenantDatabase }>();
      await Promise.all(
        work.map(async (w) => {
          try {
            const tenant = await databases.get(w.tenant);
            inUse.push(tenant);
            invocation.watch(tenant.pool);
            ready.set(w.tenant, { work: w, tenant });
          } catch (error) {
            for (const write of w.writes)
              outcomes.set(write.messageId, { kind: 'transient', cause: 'storage', error });
            logger.error('tenant database unavailable', { tenant: w.tenant, error });
          }
        }),
      );
      const results = await permits.run(
        [...ready.values()].map((r) => ({
          tenant: r.work.tenant,
          pool: r.tenant.pool,
          writes: r.work.writes.length,
        })),
        {
          deadline: cutoff,
          signal: deadline.signal,
          leaseMs: Math.max(1, remainingMs + config.semaphoreLeaseMarginMs),
        },
        (tenant) => {
          const r = ready.get(tenant)!;
          return applyTenantWrites(r.work, r.tenant.db);
        },
      );
      for (const [tenant, result] of results) {
        if ('permits' in result) {
          invocation.permitsHeld += result.permits;
          continue;
        }
        logger.warn('no semaphore permits: tenant writes redelivered', { tenant, error: result.unavailable });
        for (const write of ready.get(tenant)!.work.writes) {
          outcomes.set(write.messageId, {
            kind: 'transient',
            cause: 'permits-unavailable',
            error: result.unavailable,
          });
        }
      }
    }

    async function applyTenantWrites(work: TenantWork, db: Database): Promise<void> {
      // One chain per record, in message order; chains run concurrently on the tenant's pool.
      const chains = new Map<string, IngestWrite[]>();
      for (const write of work.writes) {
        const key = `${write.resource}${RECORD_SEPARATOR}${write.id}`;
        const chain = chains.get(key);
        if (chain === undefined) chains.set(key, [write]);
        else chain.push(write);
      }
      // Chains start in the order of their first write's priority (stable for equal ones): the pool starts
      // the first enqueued write at once when it has a free slot, so starting in message order would let a
      // low-priority first message jump ahead of every higher-priority one.
      const ordered = [...chains.values()].sort((a, b) => b[0]!.priority - a[0]!.priority);
      await Promise.all(
        ordered.map(async (chain) => {
          let blocked = false;
          for (const write of chain) {
            let outcome: WriteOutcome;
            if (blocked) {
              // Applying it now would reorder it before the earlier write's redelivery.
              outcome = { kind: 'transient', cause: 'earlier-write-failed', error: undefined };
            } else if (deadline.signal.aborted) {
              outcome = { kind: 'transient', cause: 'deadline', error: deadline.signal.reason };
            } else {
              outcome = await applyWrite(db.resource(write.resource), write, deadline.signal);
            }
            if (outcome.kind === 'transient') {
              blocked = true;
              if (outcome.cause === 'storage') {
                logger.warn('write failed, will be redelivered', {
                  tenant: write.tenant,
                  messageId: write.messageId,
                  resource: write.resource,
                  id: write.id,
                  error: outcome.error,
                });
              }
            }
            outcomes.set(write.messageId, outcome);
          }
        }),
      );
    }
  };

  return Object.assign(handler, { close: () => databases.close() });
}

function parse(
  record: SQSRecord,
  config: IngestConfig,
  letters: DeadLetter[],
  outcomes: Map<string, WriteOutcome>,
): IngestWrite | undefined {
  try {
    return parseIngestMessage(record.body, { messageId: record.messageId, resources: config.resources });
  } catch (err) {
    if (!(err instanceof InvalidMessageError)) {
      // Not a contract violation but a bug of ours: redeliver rather than dead-letter a possibly good message.
      outcomes.set(record.messageId, { kind: 'transient', cause: 'unexpected', error: err });
      return undefined;
    }
    letters.push({
      messageId: record.messageId,
      body: record.body,
      reason: err.reason,
      errorName: err.name,
      detail: err.message,
    });
    outcomes.set(record.messageId, { kind: 'permanent', reason: err.reason, error: err });
    return undefined;
  }
}
