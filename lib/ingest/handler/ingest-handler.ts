import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { ObjectStore } from '../../db/object-store.js';
import { S3ObjectStore } from '../../db/s3-object-store.js';
import { ConcurrencyBudget } from '../../pool/concurrency-budget.js';
import { SemaphoreTimeoutError } from '../../semaphore/errors.js';
import type { IngestConfig } from '../config.js';
import { type AwsClients, createAwsClients } from './aws-clients.js';
import { type Clock, systemClock } from './clock.js';
import { InvocationDeadline } from './invocation-deadline.js';
import { withholdFifoLetters } from './plan/fifo-groups.js';
import { planBatch } from './plan/plan-batch.js';
import { SourceBinding } from './plan/source-binding.js';
import { observeBudgets } from './run/observed-budgets.js';
import { dynamoRateBudgets } from './run/prefix-budgets.js';
import { PrefixRates, settleMs } from './run/prefix-rates.js';
import { PrefixWriteCounts } from './run/prefix-write-counts.js';
import type { RateBudgetFactory } from './run/rate-holder.js';
import { runTenants } from './run/run-tenants.js';
import { TenantDatabases } from './run/tenant-databases.js';
import { WriteCountingStore } from './run/write-counting-store.js';
import { DeadLetterQueue } from './settle/dead-letter-queue.js';
import type { DeadLetterSink } from './settle/dead-letter-sink.js';
import { DEFERRAL_POLICY, deferOutOfTurn } from './settle/defer-out-of-turn.js';
import type { DeferralPort } from './settle/deferral-port.js';
import { SqsDeferrals } from './settle/deferral-queue.js';
import {
  type InvocationCounts,
  InvocationMetrics,
  type InvocationSamples,
  type InvocationSplits,
} from './settle/invocation-metrics.js';
import { OutcomeLedger } from './settle/outcome-ledger.js';
import { backOffRedeliveries, SqsVisibility, type VisibilityPort } from './settle/redelivery-backoff.js';
import { sendDeadLetters } from './settle/send-dead-letters.js';

export interface IngestHandlerOptions {
  /**
   * SDK clients to use instead of the ones built from the config (one set per container).
   * @default built from the config once per container: S3 sized to `POOL_CONCURRENCY`, SQS, DynamoDB
   * @example { clients: { s3: createS3Client({ maxSockets: 64 }) } }
   */
  readonly clients?: Partial<AwsClients>;
  /**
   * Structured JSON logs.
   * @default new Logger() (service from `POWERTOOLS_SERVICE_NAME`)
   * @example { logger: new Logger({ serviceName: 'ingest', logLevel: 'WARN' }) }
   */
  readonly logger?: Logger;
  /**
   * EMF metrics.
   * @default new Metrics() (namespace and service from the Powertools environment)
   * @example { metrics: new Metrics({ namespace: 'S3Ingest', serviceName: 'ingest' }) }
   */
  readonly metrics?: Metrics;
  /**
   * Publish the stored metrics at the end of every invocation. The Lambda entry point sets `false` because
   * its `logMetrics` middleware publishes (and adds the cold-start metric).
   * @default true
   * @example { flushMetrics: false }
   */
  readonly flushMetrics?: boolean;
  /**
   * Storage port: where every tenant's records go, shared by all of them.
   * @default new S3ObjectStore(clients.s3, BUCKET_NAME)
   * @example { store: new MemoryObjectStore({ bucket: 'test' }) } // conditional writes enforced, no emulator
   */
  readonly store?: ObjectStore;
  /**
   * Rate-budget port: builds the fleet-wide write budget of a prefix, `(name, ceiling, startRate) =>
   * RateBudget` (docs/fleet-cap.md; `startRate` where a missing item starts, undefined: the ceiling): tenants with `SMALL_TENANTS.writes` or more book slots in it and pace their writes.
   * @default `dynamoRateBudgets(config, dynamodb, SEMAPHORE_TABLE)`: one DynamoDB item per prefix (none when
   * SEMAPHORE_TABLE is unset: pools bounded by the invocation only)
   * @example { budgets: (name, ceiling, startRate) => new MemoryRateBudget({ name, ceiling, startRate }) }
   */
  readonly budgets?: RateBudgetFactory;
  /**
   * Dead-letter port: where permanent failures go; ids it does not take are redelivered.
   * @default new DeadLetterQueue(clients.sqs, DLQ_URL)
   * @example { deadLetters: new MemoryDeadLetterSink() }
   */
  readonly deadLetters?: DeadLetterSink;
  /**
   * Redelivery port: where failed records get their backoff visibility timeout
   * (`min(5 s x 2^(receiveCount - 1), 300 s)`, `redelivery-backoff.ts`); `false` leaves them to the
   * queue's visibility timeout.
   * @default new SqsVisibility(clients.sqs) (ChangeMessageVisibilityBatch)
   * @example { redeliveries: false }
   */
  readonly redeliveries?: VisibilityPort | false;
  /**
   * Deferral port: where records whose tenant's prefix has no slot for it within `DEFERRAL_POLICY.turnWaitMs` go
   * (a copy in their own queue, delayed 1 s doubling per deferral up to 30 s, at most `DEFERRAL_POLICY.maxDeferrals`
   * times; `defer-out-of-turn.ts`), so a hot tenant's waiting records do not hold the queue's concurrent
   * invocations from the other tenants; `false` lets them wait for slots as long as any tenant (half the
   * time left), then redelivers them.
   * @default new SqsDeferrals(clients.sqs) (SendMessageBatch to each record's own queue; FIFO records are
   * never deferred)
   * @example { deferrals: new MemoryDeferrals() }
   */
  readonly deferrals?: DeferralPort | false;
  /**
   * Time port: the invocation's start, duration and cutoff timer.
   * @default systemClock (Date.now and setTimeout)
   * @example { clock: { now: () => fake.now, schedule: (ms, fn) => fake.at(ms, fn) } }
   */
  readonly clock?: Clock;
  /**
   * Called after every invocation with what it did (the local runner's summary, tests).
   * @default undefined
   * @example { onInvocation: (summary) => console.log(summary.RecordsProcessed) }
   */
  readonly onInvocation?: (summary: InvocationSummary) => void;
}

/** What one invocation did: the published metrics (`lib/ingest/metric-names.ts`) plus context. */
export type InvocationSummary = InvocationCounts & {
  readonly records: number;
  readonly tenants: number;
  readonly durationMs: number;
  readonly deadlineReached: boolean;
  /** Rate reports that failed (the budget's step is lost; no outcome changed). */
  readonly rateReportFailures: number;
  /** `RecordsRedelivered` by cause and `RecordsRejected` by reason (the second-dimension lines). */
  readonly splits: InvocationSplits;
  /** The latency samples published (at most 99 per metric); not logged in the summary line. */
  readonly samples: InvocationSamples;
};

/** The ingestion Lambda: an SQS batch in, the records SQS must redeliver out. */
export interface IngestHandler {
  (event: SQSEvent, context: Context): Promise<SQSBatchResponse>;
  /** Drains and disconnects the cached tenant Databases (local runner shutdown, tests). */
  close(): Promise<void>;
}

/**
 * Builds the handler once per container (cold start): the ports (storage, semaphores, dead letters, clock)
 * and the state shared by warm invocations (the tenant Database cache, the invocation budget, the prefix
 * rates). Each invocation then runs three stages over one `OutcomeLedger`:
 *
 * 1. plan: parse every record against contract v1, group the writes by tenant, chain them per record
 *    (pure; contract violations are refused at once);
 * 2. run: each tenant under its prefix's rate, through its own pool, writes to one record in message order and
 *    different records concurrently, nothing started after the cutoff (`DEADLINE_MARGIN_MS` before the
 *    Lambda timeout) and in-flight writes aborted then;
 * 3. settle: permanent failures to the dead-letter sink, then `batchItemFailures` = every record not
 *    written or dead-lettered (a record no stage reached is redelivered by construction).
 */
export function createIngestHandler(config: IngestConfig, options: IngestHandlerOptions = {}): IngestHandler {
  const clients = createAwsClients(config, options.clients);
  const logger = options.logger ?? new Logger();
  const metrics = options.metrics ?? new Metrics();
  const flushMetrics = options.flushMetrics ?? true;
  const clock = options.clock ?? systemClock;
  // The invocation running now. The store, the budgets and the tenant pools are shared by warm
  // invocations, which Lambda runs one at a time per container: their calls are counted by the one running.
  let running: InvocationMetrics | undefined;
  // Writes per tenant prefix for the holders' rounds (the prefix limit is a write rate).
  const prefixWrites = new PrefixWriteCounts();
  const store = new WriteCountingStore(
    options.store ?? new S3ObjectStore(clients.s3, config.bucketName),
    (key) => {
      running?.countWrite();
      prefixWrites.count(key);
    },
  );
  const table = config.semaphoreTable;
  const deadLetters = options.deadLetters ?? new DeadLetterQueue(clients.sqs, config.dlqUrl);
  const redeliveries = options.redeliveries ?? new SqsVisibility(clients.sqs);
  const deferrals =
    options.deferrals === false ? undefined : (options.deferrals ?? new SqsDeferrals(clients.sqs));
  const databases = new TenantDatabases({
    config,
    store,
    budget: new ConcurrencyBudget(config.poolConcurrency),
  });
  const budgetFactory =
    options.budgets ?? (table === undefined ? undefined : dynamoRateBudgets(config, clients.dynamodb, table));
  const budgets = budgetFactory === undefined ? undefined : observeBudgets(budgetFactory, () => running);
  const rates = new PrefixRates(config, budgets, prefixWrites);
  // Tenant-bound producers: without SOURCE_TENANTS, single-queue mode (any tenant from any source).
  const planOptions =
    config.sourceTenants === undefined ? {} : { binding: new SourceBinding(config.sourceTenants) };

  const handler = async (event: SQSEvent, context: Context): Promise<SQSBatchResponse> => {
    // Prepare: the invocation's state, apart from the behaviour above.
    const startedAt = clock.now();
    const remainingMs = context.getRemainingTimeInMillis();
    const records = event.Records ?? [];
    // After the cutoff: a quarter of the margin for the rate reports, up to half for the dead letters.
    const deadline = new InvocationDeadline(
      clock,
      startedAt,
      remainingMs,
      config.deadlineMarginMs,
      settleMs(config),
    );
    const ledger = new OutcomeLedger(records);
    const invocation = new InvocationMetrics();
    running = invocation;
    const plan = planBatch(records, config.resources, planOptions);
    const takes = deferrals?.takes?.bind(deferrals);
    const byId = takes === undefined ? undefined : new Map(records.map((r) => [r.messageId, r]));

    // Process.
    try {
      for (const { messageId, outcome, tenant } of plan.unparsed) ledger.settle(messageId, outcome, tenant);
      await runTenants(plan.tenants, databases, rates, {
        ledger,
        deadline,
        metrics: invocation,
        logger,
        ...(deferrals === undefined ? {} : { turnWaitMs: DEFERRAL_POLICY.turnWaitMs }),
        ...(takes === undefined || byId === undefined
          ? {}
          : {
              deferrable: (messageId: string) => {
                const record = byId.get(messageId);
                return record !== undefined && takes(record);
              },
            }),
      });
      await deferOutOfTurn(ledger, deferrals, logger, deadline.settleSignal);
      withholdFifoLetters(ledger);
      await sendDeadLetters(ledger, deadLetters, logger, deadline.settleSignal);
      if (redeliveries !== false) {
        await backOffRedeliveries(records, ledger.response().batchItemFailures, redeliveries, {
          signal: deadline.settleSignal,
          logger,
          // Records that only ran out of turn: their prefix's schedule had no slot for them before the
          // cutoff, or the cutoff stopped them (their turn came late in the invocation). When they come back
          // they book their prefix's slots again, which is what keeps S3 under its limit, so they need not also sit
          // out the SlowDown backoff, which would leave a hot prefix idle while its last records wait in the
          // queue (docs/decisions/defer-out-of-turn.md).
          waitedForTurn: (messageId) => {
            const fate = ledger.fateOf(messageId);
            if (fate?.state !== 'redeliver') return false;
            if (fate.cause === 'deadline') return true;
            return fate.cause === 'permits-unavailable' && fate.error instanceof SemaphoreTimeoutError;
          },
        });
      }
    } finally {
      // Clean.
      deadline.dispose();
      invocation.detach();
      if (running === invocation) running = undefined;
    }

    const response = ledger.response();
    invocation.settle(ledger.counts(), deadline.reached);
    const tenants = plan.tenants.map((t) => t.tenant);
    invocation.addTo(metrics, tenants);
    if (flushMetrics) metrics.publishStoredMetrics();
    const summary: InvocationSummary = {
      records: records.length,
      tenants: tenants.length,
      ...invocation.counts,
      durationMs: clock.now() - startedAt,
      deadlineReached: deadline.reached,
      rateReportFailures: invocation.rateReportFailures,
      splits: invocation.splits(),
      samples: invocation.samples(),
    };
    const { samples: _samples, ...logged } = summary;
    logger.info('batch processed', logged);
    options.onInvocation?.(summary);
    return response;
  };

  return Object.assign(handler, { close: () => databases.close() });
}
