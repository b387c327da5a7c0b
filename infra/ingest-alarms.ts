import { Duration } from 'aws-cdk-lib';
import {
  Alarm,
  ComparisonOperator,
  type IMetric,
  MathExpression,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import {
  ALARM_IDS,
  ALARM_SEVERITIES,
  type AlarmId,
  type AlarmSeverity,
  runbookLink,
} from './alarm-catalogue.js';
import type { EnvironmentConfig } from './config.js';
import { type IngestMetricsScope, ingestMetric } from './ingest-metric.js';

export interface IngestAlarmsProps {
  readonly config: EnvironmentConfig;
  readonly metrics: IngestMetricsScope;
  /** The ingest queues (one, or one per producer): the age alarm watches the oldest message of any. */
  readonly queues: readonly IQueue[];
  /** SQS's redrive target: valid messages that failed `maxReceiveCount` times. */
  readonly deadLetterQueue: IQueue;
  /** Where the function puts the messages it refuses (permanent failures, with a `reason`). */
  readonly rejectedQueue: IQueue;
  readonly fn: IFunction;
  /** Every alarm notifies the topics of its severity on ALARM and on OK. */
  readonly topics: Readonly<Record<AlarmSeverity, readonly ITopic[]>>;
}

interface AlarmSpec {
  readonly description: string;
  readonly metric: IMetric;
  readonly threshold: number;
  readonly comparison: ComparisonOperator;
  /** Consecutive minutes the condition must hold. */
  readonly periods: number;
}

const MINUTE = Duration.minutes(1);
const HOUR_SECONDS = 3600;
const DAY_SECONDS = 86_400;

/**
 * The alarms of one environment, each with a severity (page or ticket topic) and a runbook link in its
 * description. Thresholds come from the environment's `alarms` block. No data means no traffic (or no
 * failures): that is healthy, so missing data never breaches.
 */
export class IngestAlarms extends Construct {
  readonly byId: Readonly<Record<AlarmId, Alarm>>;

  constructor(scope: Construct, id: string, props: IngestAlarmsProps) {
    super(scope, id);
    const { config, metrics, queues, deadLetterQueue: dlq, rejectedQueue: rejected, fn } = props;
    const { alarms } = config;
    const sustained = alarms.evaluationPeriods;
    const atLeast = ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD;
    const over = ComparisonOperator.GREATER_THAN_THRESHOLD;
    const metric = (name: Parameters<typeof ingestMetric>[1]) => ingestMetric(metrics, name, 'Sum', MINUTE);
    // A message expires `dlqDays` after its ORIGINAL enqueue (a redrive keeps that timestamp), which is
    // also what ApproximateAgeOfOldestMessage measures: warn `expiryWarningHours` before it is lost.
    const expiryThreshold = config.retention.dlqDays * DAY_SECONDS - alarms.expiryWarningHours * HOUR_SECONDS;
    const expiryIn = `${alarms.expiryWarningHours} h`;

    const specs: Record<AlarmId, AlarmSpec> = {
      OldestMessageAge: {
        description: `The oldest message in the ingest queue is older than ${alarms.oldestMessageAgeSeconds} s: ingestion is falling behind or paused.`,
        metric: oldestOf(queues),
        threshold: alarms.oldestMessageAgeSeconds,
        comparison: over,
        periods: sustained,
      },
      // On arrivals, not on depth: a DLQ that already holds messages must still notify on a new incident,
      // and return to OK once the arrivals stop. FILL(REPEAT) bridges minutes SQS did not report.
      DeadLettersArrived: {
        description:
          'New messages in the dead-letter queue: valid messages failed maxReceiveCount deliveries (transient failures that did not recover).',
        metric: new MathExpression({
          label: 'DLQ arrivals',
          expression: 'DIFF(FILL(visible, REPEAT))',
          usingMetrics: {
            visible: dlq.metricApproximateNumberOfMessagesVisible({ period: MINUTE, statistic: 'Maximum' }),
          },
          period: MINUTE,
        }),
        threshold: 1,
        comparison: atLeast,
        periods: 1,
      },
      DeadLetterAge: {
        description: `A dead-lettered message expires in less than ${expiryIn} (retention ${config.retention.dlqDays} days): redrive or export it.`,
        metric: dlq.metricApproximateAgeOfOldestMessage({ period: MINUTE, statistic: 'Maximum' }),
        threshold: expiryThreshold,
        comparison: over,
        periods: 1,
      },
      // Depth, beside the arrival page: a ticket that stays red until the DLQ is empty again, so letters
      // left after an incident are not forgotten until DeadLetterAge. The 5-minute maximum bridges minutes
      // SQS did not report.
      DeadLettersWaiting: {
        description:
          'The dead-letter queue is not empty: fix the cause, then redrive the letters (or export them); OK once it is empty.',
        metric: dlq.metricApproximateNumberOfMessagesVisible({
          period: Duration.minutes(5),
          statistic: 'Maximum',
        }),
        threshold: 0,
        comparison: over,
        periods: 1,
      },
      FunctionErrors: {
        description: 'The ingest function failed whole invocations (crash, timeout or unhandled error).',
        metric: fn.metricErrors({ period: MINUTE, statistic: 'Sum' }),
        threshold: alarms.functionErrors,
        comparison: atLeast,
        periods: sustained,
      },
      FunctionThrottles: {
        description: 'The ingest function was throttled (reserved concurrency or the account limit).',
        metric: fn.metricThrottles({ period: MINUTE, statistic: 'Sum' }),
        threshold: alarms.functionThrottles,
        comparison: atLeast,
        periods: sustained,
      },
      // FILL turns "no datapoint this minute" into 0 so a minute with errors and no writes still counts.
      PoolErrorRate: {
        description: `More than ${alarms.poolErrorRatePercent}% of pool tasks failed for good (PoolErrors / (Writes + PoolErrors)).`,
        metric: new MathExpression({
          label: 'Pool error rate (%)',
          expression: '100 * FILL(errors, 0) / (FILL(writes, 0) + FILL(errors, 0))',
          usingMetrics: { errors: metric('PoolErrors'), writes: metric('Writes') },
          period: MINUTE,
        }),
        threshold: alarms.poolErrorRatePercent,
        comparison: over,
        periods: sustained,
      },
      // The function sends here itself; SQS's own redrive moves are not counted by NumberOfMessagesSent,
      // and this queue is no redrive target anyway, so the metric counts exactly the rejections.
      MessagesRejected: {
        description: `The function rejected at least ${alarms.rejectedPerMinute} message(s) in a minute (contract violations or permanent write failures; the reason is on each message).`,
        metric: rejected.metricNumberOfMessagesSent({ period: MINUTE, statistic: 'Sum' }),
        threshold: alarms.rejectedPerMinute,
        comparison: atLeast,
        periods: 1,
      },
      RejectedMessageAge: {
        description: `A rejected message expires in less than ${expiryIn} (retention ${config.retention.dlqDays} days): export it if the producer needs it.`,
        metric: rejected.metricApproximateAgeOfOldestMessage({ period: MINUTE, statistic: 'Maximum' }),
        threshold: expiryThreshold,
        comparison: over,
        periods: 1,
      },
      RecordsFailedRate: {
        description: `More than ${alarms.recordsFailedPercent}% of records were returned for redelivery (partial batch failures, which Lambda Errors never shows).`,
        metric: new MathExpression({
          label: 'Records failed (%)',
          expression: '100 * FILL(failed, 0) / (FILL(processed, 0) + FILL(failed, 0) + FILL(rejected, 0))',
          usingMetrics: {
            failed: metric('RecordsFailed'),
            processed: metric('RecordsProcessed'),
            rejected: metric('RecordsDeadLettered'),
          },
          period: MINUTE,
        }),
        threshold: alarms.recordsFailedPercent,
        comparison: over,
        periods: sustained,
      },
      DurationNearTimeout: {
        description: `An invocation ran longer than ${alarms.durationTimeoutPercent}% of the ${config.timeoutSeconds} s timeout.`,
        metric: fn.metricDuration({ period: MINUTE, statistic: 'Maximum' }),
        threshold: (config.timeoutSeconds * 1000 * alarms.durationTimeoutPercent) / 100,
        comparison: over,
        periods: sustained,
      },
      SlowDownRate: {
        description: `S3 answered SlowDown/503 more than ${alarms.slowDownPerMinute} times a minute: a prefix is over its write rate.`,
        metric: metric('S3SlowDowns'),
        threshold: alarms.slowDownPerMinute,
        comparison: over,
        periods: sustained,
      },
      SemaphoreErrors: {
        description: `The fleet cap's DynamoDB calls (bookings and reports on the semaphore table) were throttled or failed at least ${alarms.semaphoreErrorsPerMinute} time(s) a minute.`,
        metric: new MathExpression({
          label: 'Semaphore throttles + errors',
          expression: 'FILL(throttles, 0) + FILL(errors, 0)',
          usingMetrics: { throttles: metric('SemaphoreThrottles'), errors: metric('SemaphoreErrors') },
          period: MINUTE,
        }),
        threshold: alarms.semaphoreErrorsPerMinute,
        comparison: atLeast,
        periods: sustained,
      },
    };

    const actions = {
      page: props.topics.page.map((t) => new SnsAction(t)),
      ticket: props.topics.ticket.map((t) => new SnsAction(t)),
    };
    const byId = {} as Record<AlarmId, Alarm>;
    for (const alarmId of ALARM_IDS) {
      const spec = specs[alarmId];
      const severity = ALARM_SEVERITIES[alarmId];
      const alarm = new Alarm(this, alarmId, {
        alarmDescription: `[${severity}] ${spec.description} Runbook: ${runbookLink(config.runbookBaseUrl, alarmId)}`,
        metric: spec.metric,
        threshold: spec.threshold,
        comparisonOperator: spec.comparison,
        evaluationPeriods: spec.periods,
        datapointsToAlarm: spec.periods,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
      alarm.addAlarmAction(...actions[severity]);
      alarm.addOkAction(...actions[severity]);
      byId[alarmId] = alarm;
    }
    this.byId = byId;
  }

  get all(): Alarm[] {
    return ALARM_IDS.map((id) => this.byId[id]);
  }
}

/** The oldest message age of one queue, or the largest over several (producer queues). */
function oldestOf(queues: readonly IQueue[]): IMetric {
  const ages = queues.map((q) =>
    q.metricApproximateAgeOfOldestMessage({ period: MINUTE, statistic: 'Maximum' }),
  );
  if (ages.length === 1) return ages[0]!;
  const usingMetrics = Object.fromEntries(ages.map((m, i) => [`q${i}`, m]));
  return new MathExpression({
    expression: `MAX([${Object.keys(usingMetrics).join(',')}])`,
    usingMetrics,
    period: MINUTE,
    label: 'Oldest message age, any ingest queue',
  });
}
