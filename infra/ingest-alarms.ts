import { Duration } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, MathExpression, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { EnvironmentConfig } from './config.js';
import { ingestMetric } from './ingest-metric.js';

export interface IngestAlarmsProps {
  readonly config: EnvironmentConfig;
  readonly queue: IQueue;
  readonly deadLetterQueue: IQueue;
  readonly fn: IFunction;
  /** Every alarm notifies this topic on ALARM and on OK. */
  readonly topic: ITopic;
}

/** The alarms an operator gets paged for; thresholds come from the environment's `alarms` block. */
export class IngestAlarms extends Construct {
  readonly dlqNotEmpty: Alarm;
  readonly oldestMessageAge: Alarm;
  readonly functionErrors: Alarm;
  readonly functionThrottles: Alarm;
  readonly slowDownRate: Alarm;
  readonly poolErrorRate: Alarm;

  constructor(scope: Construct, id: string, props: IngestAlarmsProps) {
    super(scope, id);
    const { config, queue, deadLetterQueue, fn } = props;
    const { alarms } = config;
    const minute = Duration.minutes(1);
    const sustained = {
      evaluationPeriods: alarms.evaluationPeriods,
      datapointsToAlarm: alarms.evaluationPeriods,
    };
    // No data means no traffic (or no failures): that is healthy, not "insufficient data".
    const quietIsOk = TreatMissingData.NOT_BREACHING;

    this.dlqNotEmpty = new Alarm(this, 'DlqNotEmpty', {
      alarmDescription:
        'The DLQ holds messages: permanent failures (reason in the message attribute) or records that exhausted maxReceiveCount.',
      metric: deadLetterQueue.metricApproximateNumberOfMessagesVisible({
        period: minute,
        statistic: 'Maximum',
      }),
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      threshold: 1,
      evaluationPeriods: 1,
      treatMissingData: quietIsOk,
    });

    this.oldestMessageAge = new Alarm(this, 'OldestMessageAge', {
      alarmDescription: `The oldest message in the ingest queue is older than ${alarms.oldestMessageAgeSeconds} s: ingestion is falling behind.`,
      metric: queue.metricApproximateAgeOfOldestMessage({ period: minute, statistic: 'Maximum' }),
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      threshold: alarms.oldestMessageAgeSeconds,
      ...sustained,
      treatMissingData: quietIsOk,
    });

    this.functionErrors = new Alarm(this, 'FunctionErrors', {
      alarmDescription: 'The ingest function failed whole invocations (crash, timeout or unhandled error).',
      metric: fn.metricErrors({ period: minute, statistic: 'Sum' }),
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      threshold: alarms.functionErrors,
      ...sustained,
      treatMissingData: quietIsOk,
    });

    this.functionThrottles = new Alarm(this, 'FunctionThrottles', {
      alarmDescription: 'The ingest function was throttled (reserved concurrency or account limit).',
      metric: fn.metricThrottles({ period: minute, statistic: 'Sum' }),
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      threshold: alarms.functionThrottles,
      ...sustained,
      treatMissingData: quietIsOk,
    });

    this.slowDownRate = new Alarm(this, 'SlowDownRate', {
      alarmDescription: `S3 answered SlowDown/503 more than ${alarms.slowDownPerMinute} times a minute: a prefix is over its write rate.`,
      metric: ingestMetric(config, 'Throttles', 'Sum', minute),
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      threshold: alarms.slowDownPerMinute,
      ...sustained,
      treatMissingData: quietIsOk,
    });

    // FILL turns "no datapoint this minute" into 0 so a minute with errors and no writes still counts.
    this.poolErrorRate = new Alarm(this, 'PoolErrorRate', {
      alarmDescription: `More than ${alarms.poolErrorRatePercent}% of pool tasks failed for good (PoolErrors / (Writes + PoolErrors)).`,
      metric: new MathExpression({
        label: 'Pool error rate (%)',
        expression: '100 * FILL(errors, 0) / (FILL(writes, 0) + FILL(errors, 0))',
        usingMetrics: {
          errors: ingestMetric(config, 'PoolErrors', 'Sum', minute),
          writes: ingestMetric(config, 'Writes', 'Sum', minute),
        },
        period: minute,
      }),
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      threshold: alarms.poolErrorRatePercent,
      ...sustained,
      treatMissingData: quietIsOk,
    });

    const action = new SnsAction(props.topic);
    for (const alarm of this.all) {
      alarm.addAlarmAction(action);
      alarm.addOkAction(action);
    }
  }

  get all(): Alarm[] {
    return [
      this.dlqNotEmpty,
      this.oldestMessageAge,
      this.functionErrors,
      this.functionThrottles,
      this.slowDownRate,
      this.poolErrorRate,
    ];
  }
}
