import { fileURLToPath } from 'node:url';
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Tags, Validations } from 'aws-cdk-lib';
import { AttributeType, BillingMode, Table } from 'aws-cdk-lib/aws-dynamodb';
import {
  AccountPrincipal,
  AnyPrincipal,
  ArnPrincipal,
  Effect,
  type IPrincipal,
  PolicyStatement,
  Role,
  ServicePrincipal,
} from 'aws-cdk-lib/aws-iam';
import { Architecture, Runtime } from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import {
  BlockPublicAccess,
  Bucket,
  BucketEncryption,
  type CfnBucket,
  ObjectOwnership,
} from 'aws-cdk-lib/aws-s3';
import { type ITopic, Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { HIDDEN_TAGS } from '../lib/db/sequenced-state.js';
import { type ProducerConfig, type ResolvedEnvironment, tombstoneHorizonDays } from './config.js';
import { IngestAlarms } from './ingest-alarms.js';
import { IngestDashboard } from './ingest-dashboard.js';
import { ingestMetricsScope } from './ingest-metric.js';

/** Every object the function may touch lives under a tenant prefix `t=<tenant>/` (design.md key layout). */
export const TENANT_KEY_PATTERN = 't=*';
const DEFAULT_ENTRY = fileURLToPath(new URL('../functions/ingest.ts', import.meta.url));

export interface IngestStackProps extends StackProps {
  readonly environment: ResolvedEnvironment;
  /** Lambda entry file. @default functions/ingest.ts of this repository */
  readonly entry?: string;
}

/**
 * SQS -> Lambda -> S3 ingestion for one environment: ingest queue, dead-letter queue (SQS redrive after
 * `maxReceiveCount`) and rejected-messages queue (what the function refuses itself), the ingest function,
 * the data bucket (+ access-log bucket), the semaphore table, a dashboard, and alarms that notify a page
 * topic or a ticket topic by severity.
 */
export class IngestStack extends Stack {
  /** The ingest queue; with `producers`, the first producer's (see `queues`). */
  readonly queue: Queue;
  /** Every ingest queue, each with its event source: one, or one per producer. */
  readonly queues: readonly Queue[];
  /** With `producers`: each producer and its queue (bound to its tenants by SOURCE_TENANTS). */
  readonly producerQueues: readonly { readonly producer: ProducerConfig; readonly queue: Queue }[];
  readonly deadLetterQueue: Queue;
  readonly rejectedQueue: Queue;
  readonly bucket: Bucket;
  readonly accessLogsBucket: Bucket;
  readonly table: Table;
  readonly fn: NodejsFunction;
  /** Page-severity alarms notify this topic (and `alarms.topicArn` when set). */
  readonly alarmTopic: Topic;
  /** Ticket-severity alarms notify this topic (and `alarms.ticketTopicArn` when set). */
  readonly ticketTopic: Topic;
  readonly alarms: IngestAlarms;
  readonly dashboard: IngestDashboard;

  constructor(scope: Construct, id: string, props: IngestStackProps) {
    super(scope, id, props);
    const { name: envName, config } = props.environment;
    const { retention } = config;
    const removalPolicy = config.removalPolicy === 'retain' ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    Tags.of(this).add('service', config.serviceName);
    Tags.of(this).add('environment', envName);

    // --- Storage -------------------------------------------------------------------------------------
    this.accessLogsBucket = new Bucket(this, 'AccessLogsBucket', {
      // S3 server access logging can only deliver to SSE-S3 buckets, not SSE-KMS.
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      lifecycleRules: [{ id: 'expire-access-logs', expiration: Duration.days(retention.accessLogDays) }],
      removalPolicy,
    });

    this.bucket = new Bucket(this, 'DataBucket', {
      encryption: BucketEncryption.S3_MANAGED,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      versioned: config.versioning,
      serverAccessLogsBucket: this.accessLogsBucket,
      serverAccessLogsPrefix: 'data-bucket/',
      lifecycleRules: [
        // Records are single PUTs, but an SDK upgrade or a manual upload can leave multipart debris.
        { id: 'abort-incomplete-multipart-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
        // Tombstones and pending partials (tagged by lib/db) expire once no older write can still arrive.
        {
          id: 'expire-tombstones',
          tagFilters: { ...HIDDEN_TAGS },
          expiration: Duration.days(tombstoneHorizonDays(retention)),
        },
        ...(config.versioning
          ? [
              {
                id: 'expire-noncurrent-versions',
                noncurrentVersionExpiration: Duration.days(retention.noncurrentVersionDays),
                expiredObjectDeleteMarker: true,
              },
            ]
          : []),
      ],
      removalPolicy,
    });

    this.table = new Table(this, 'SemaphoreTable', {
      partitionKey: { name: 'pk', type: AttributeType.STRING },
      sortKey: { name: 'sk', type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      // No TTL attribute: one schedule item per prefix written to, of constant size (docs/fleet-cap.md).
      removalPolicy,
    });

    // --- Queues --------------------------------------------------------------------------------------
    // Two destinations for messages that did not land, because they call for different responses: the
    // dead-letter queue holds valid messages that kept failing (an incident: fix, then redrive), the
    // rejected queue holds what the function refused itself with a reason (a producer problem: a ticket).
    // FIFO (`fifo: true`): the ingest queues and their DLQ (SQS requires a FIFO queue's DLQ to be FIFO).
    const fifo = config.fifo ? { fifo: true, contentBasedDeduplication: false } : {};
    this.deadLetterQueue = new Queue(this, 'DeadLetterQueue', {
      ...(config.fifo ? { fifo: true } : {}),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(retention.dlqDays),
      removalPolicy,
    });
    this.rejectedQueue = new Queue(this, 'RejectedQueue', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(retention.dlqDays),
      removalPolicy,
    });
    Validations.of(this.rejectedQueue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        'The rejected queue is a dead-letter destination the function sends to itself (DLQ_URL), not an SQS redrive target, so cdk-nag cannot see it is one; nothing consumes it automatically.',
    });
    // Every ingest queue has the same shape: encrypted, TLS only, redriving to the one DLQ.
    const ingestQueue = (id: string) =>
      new Queue(this, id, {
        encryption: QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        retentionPeriod: Duration.days(retention.queueDays),
        // AWS guidance for SQS event sources: at least 6x the function timeout plus the batching window, so
        // a batch still being retried by the poller is not handed to a second invocation.
        visibilityTimeout: Duration.seconds(6 * config.timeoutSeconds + config.maxBatchingWindowSeconds),
        deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: config.maxReceiveCount },
        // Deduplication by the producer's MessageDeduplicationId only: two equal bodies can be two writes.
        ...fifo,
        removalPolicy,
      });
    // Without `producers`: today's single queue (same logical id). With them: one queue per producer,
    // only its principals may send, and the function binds each queue to its tenants (SOURCE_TENANTS).
    const producers = config.producers ?? [];
    this.producerQueues = producers.map((producer) => ({
      producer,
      queue: ingestQueue(`ProducerQueue-${producer.name}`),
    }));
    this.queues =
      this.producerQueues.length === 0
        ? [ingestQueue('IngestQueue')]
        : this.producerQueues.map((p) => p.queue);
    this.queue = this.queues[0]!;

    // --- Function ------------------------------------------------------------------------------------
    const logGroup = new LogGroup(this, 'IngestFunctionLogs', {
      retention: retention.logDays as RetentionDays,
      removalPolicy,
    });
    // Our own role instead of the default one: the default attaches the AWSLambdaBasicExecutionRole managed
    // policy, which may write to every log group in the account.
    const role = new Role(this, 'IngestFunctionRole', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `s3-ingest ${envName}: ingest function (tenant objects, own queues, own table, own logs)`,
    });
    logGroup.grantWrite(role);
    // Deferred records (SqsDeferrals): a record whose tenant cannot get its turn soon is re-sent by the
    // function to the queue it came from. Not on FIFO queues, where SqsDeferrals defers nothing (a
    // per-message delay is invalid there and a copy would leave its group's order).
    const defers = !config.fifo;
    for (const { producer, queue } of this.producerQueues) {
      restrictSenders(queue, producer.principals, defers ? role.roleArn : undefined);
    }

    const metrics = ingestMetricsScope(props.environment);
    this.fn = new NodejsFunction(this, 'IngestFunction', {
      entry: props.entry ?? DEFAULT_ENTRY,
      handler: 'handler',
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: config.memoryMb,
      timeout: Duration.seconds(config.timeoutSeconds),
      reservedConcurrentExecutions: config.reservedConcurrency,
      role,
      logGroup,
      description: `s3-ingest ${envName}: SQS batch -> per-tenant S3 writes`,
      environment: {
        BUCKET_NAME: this.bucket.bucketName,
        // The handler's DLQ_URL is where it puts what it refuses: the rejected queue. SQS's redrive policy
        // alone fills the dead-letter queue.
        DLQ_URL: this.rejectedQueue.queueUrl,
        SEMAPHORE_TABLE: this.table.tableName,
        RESOURCES: JSON.stringify(config.resources),
        ...(config.resourceShards === undefined || Object.keys(config.resourceShards).length === 0
          ? {}
          : { RESOURCE_SHARDS: JSON.stringify(config.resourceShards) }),
        POOL_CONCURRENCY: String(config.poolConcurrency),
        S3_PREFIX_WRITE_RATE: String(config.s3PrefixWriteRate),
        // loadConfig checks its deadline margin against the timeout at cold start.
        FUNCTION_TIMEOUT_SECONDS: String(config.timeoutSeconds),
        POWERTOOLS_SERVICE_NAME: config.serviceName,
        POWERTOOLS_METRICS_NAMESPACE: metrics.namespace,
        POWERTOOLS_LOG_LEVEL: config.logLevel,
        NODE_OPTIONS: '--enable-source-maps',
        ...(this.producerQueues.length === 0
          ? {}
          : {
              SOURCE_TENANTS: this.toJsonString(
                Object.fromEntries(this.producerQueues.map((p) => [p.queue.queueArn, p.producer.tenants])),
              ),
            }),
      },
      bundling: {
        // Local esbuild only: this machine (and most CI runners) has no Docker engine.
        forceDockerBundling: false,
        // @middy/core 6 ships ESM only; an ESM bundle keeps it and the Powertools ESM builds as published.
        format: OutputFormat.ESM,
        mainFields: ['module', 'main'],
        // CJS dependencies bundled into ESM still call require() for Node built-ins.
        banner:
          "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
        // The AWS SDK is bundled, not taken from the runtime: the S3 client's retry and socket behaviour
        // (maxAttempts 1, maxSockets = pool size, SlowDown error shape) is tested against the pinned
        // @aws-sdk/* and @smithy/node-http-handler versions, and mixing a bundled handler with the
        // runtime's SDK can pair mismatched @smithy internals. Tree-shaking keeps the cost small.
        externalModules: [],
        minify: true,
        sourceMap: true,
        sourcesContent: false,
      },
    });

    // One event source per ingest queue, on the same function. FIFO: no batching window (config checks it).
    for (const queue of this.queues) {
      this.fn.addEventSource(
        new SqsEventSource(queue, {
          batchSize: config.batchSize,
          maxBatchingWindow:
            config.maxBatchingWindowSeconds > 0
              ? Duration.seconds(config.maxBatchingWindowSeconds)
              : undefined,
          reportBatchItemFailures: true,
          maxConcurrency: config.maxConcurrency,
          // `false` pauses ingestion: messages wait in the queue (no receives, so none age toward the DLQ),
          // unlike throttling the function to 0, which keeps receiving and burns maxReceiveCount.
          enabled: config.ingestionEnabled,
        }),
      );
    }

    // --- Least-privilege grants (the event source mapping already granted consume on the ingest queue) ----
    // SendMessage only: the handler knows its queue URL (DLQ_URL), so no GetQueueUrl/GetQueueAttributes.
    role.addToPrincipalPolicy(
      new PolicyStatement({
        sid: 'RejectMessages',
        actions: ['sqs:SendMessage'],
        resources: [this.rejectedQueue.queueArn],
      }),
    );
    // The event source mapping grants consume only; a deferred copy is a SendMessage to the record's own queue.
    if (defers) {
      role.addToPrincipalPolicy(
        new PolicyStatement({
          sid: 'DeferRecords',
          actions: ['sqs:SendMessage'],
          resources: this.queues.map((queue) => queue.queueArn),
        }),
      );
    }
    // What the prefixes' rate budgets call: GetItem (a booking's or a step's read, strongly consistent),
    // PutItem (a new schedule), UpdateItem (the conditional write of a booking or a step).
    this.table.grant(role, 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem');
    role.addToPrincipalPolicy(
      new PolicyStatement({
        sid: 'TenantObjects',
        // PutObjectTagging: a PUT carrying tags (tombstones, for their lifecycle rule) needs it too.
        actions: ['s3:GetObject', 's3:PutObject', 's3:PutObjectTagging', 's3:DeleteObject'],
        resources: [this.bucket.arnForObjects(TENANT_KEY_PATTERN)],
      }),
    );
    // ListBucket WITHOUT an s3:prefix condition: S3 answers a GetObject of a missing key with 404 only
    // when the caller may list the bucket, and a GetObject request carries no s3:prefix, so a
    // prefix-conditioned grant does not count and the answer is 403 (an update of a missing record would
    // be retried to the DLQ instead of rejected as record-not-found). The bucket is dedicated to tenant
    // records (access logs go to their own bucket), so listing all of it reveals nothing beyond t=*.
    role.addToPrincipalPolicy(
      new PolicyStatement({
        sid: 'ListDataBucket',
        actions: ['s3:ListBucket'],
        resources: [this.bucket.bucketArn],
      }),
    );
    Validations.of(role).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${this.getLogicalId(this.bucket.node.defaultChild as CfnBucket)}.Arn>/${TENANT_KEY_PATTERN}]`,
      reason:
        'Object access is scoped to the tenant key space t=*; tenant ids are data, unknown at deploy time, and the key builder rejects anything outside t=<tenant>/.',
    });

    // --- Alarms, dashboard ---------------------------------------------------------------------------
    this.alarmTopic = new Topic(this, 'AlarmTopic', {
      displayName: `s3-ingest ${envName} alarms`,
      // No SSE-KMS: notifications carry alarm names, states and metric values only, never tenant data, and
      // CloudWatch can publish to an encrypted topic only through a customer-managed key policy.
      enforceSSL: true,
    });
    this.ticketTopic = new Topic(this, 'TicketTopic', {
      displayName: `s3-ingest ${envName} tickets`,
      enforceSSL: true,
    });
    const { email, topicArn, ticketEmail, ticketTopicArn } = config.alarms;
    if (email !== undefined) this.alarmTopic.addSubscription(new EmailSubscription(email));
    // Tickets fall back to the page email (an email never wakes anyone), not to a pager topic ARN.
    const ticketSubscriber = ticketEmail ?? (ticketTopicArn === undefined ? email : undefined);
    if (ticketSubscriber !== undefined)
      this.ticketTopic.addSubscription(new EmailSubscription(ticketSubscriber));
    const existing = (id: string, arn: string | undefined): ITopic[] =>
      arn === undefined ? [] : [Topic.fromTopicArn(this, id, arn)];
    this.alarms = new IngestAlarms(this, 'Alarms', {
      config,
      metrics,
      queues: this.queues,
      deadLetterQueue: this.deadLetterQueue,
      rejectedQueue: this.rejectedQueue,
      fn: this.fn,
      topics: {
        page: [this.alarmTopic, ...existing('ConfiguredPageTopic', topicArn)],
        ticket: [this.ticketTopic, ...existing('ConfiguredTicketTopic', ticketTopicArn)],
      },
    });
    this.dashboard = new IngestDashboard(this, 'Dashboard', {
      config,
      metrics,
      dashboardName: `${config.serviceName}-${envName}`,
      queues:
        this.producerQueues.length === 0
          ? [{ queue: this.queue, label: '' }]
          : this.producerQueues.map(({ producer, queue }) => ({ queue, label: producer.name })),
      deadLetterQueue: this.deadLetterQueue,
      rejectedQueue: this.rejectedQueue,
      fn: this.fn,
      alarms: this.alarms.all,
    });

    // --- Outputs -------------------------------------------------------------------------------------
    if (this.producerQueues.length === 0) {
      new CfnOutput(this, 'QueueUrl', {
        value: this.queue.queueUrl,
        description: 'Send ingest messages here',
      });
    }
    for (const { producer, queue } of this.producerQueues) {
      new CfnOutput(this, `QueueUrl-${producer.name}`, {
        value: queue.queueUrl,
        description: `Producer ${producer.name} sends here (tenants ${producer.tenants.join(', ')})`,
      });
    }
    new CfnOutput(this, 'DeadLetterQueueUrl', {
      value: this.deadLetterQueue.queueUrl,
      description: 'Valid messages that failed maxReceiveCount times (s3-ingest dlq peek|redrive|export)',
    });
    new CfnOutput(this, 'RejectedQueueUrl', {
      value: this.rejectedQueue.queueUrl,
      description: 'Messages the function refused, with a reason attribute (s3-ingest dlq peek|export)',
    });
    new CfnOutput(this, 'BucketName', { value: this.bucket.bucketName });
    new CfnOutput(this, 'SemaphoreTableName', { value: this.table.tableName });
    new CfnOutput(this, 'DashboardUrl', { value: this.dashboard.url });
    new CfnOutput(this, 'AlarmTopicArn', {
      value: this.alarmTopic.topicArn,
      description: 'Page-severity alarms: subscribe the on-call',
    });
    new CfnOutput(this, 'TicketTopicArn', {
      value: this.ticketTopic.topicArn,
      description: 'Ticket-severity alarms: subscribe the team queue',
    });
  }
}

/**
 * Lets only `principals` send to a producer's queue: an Allow for them (needed across accounts) and a Deny
 * of `sqs:SendMessage` to every other principal, which beats any identity policy in the account (an
 * explicit Deny wins). Accounts match `aws:PrincipalAccount`, roles and users `aws:PrincipalArn`; a
 * principal matching neither is denied. Without principals the account's IAM policies decide who sends.
 * `functionRoleArn`, when given, is exempt from the Deny (the function re-sends deferred records to the
 * queue they came from); its own identity policy allows it, so it is not added to the Allow.
 */
function restrictSenders(
  queue: Queue,
  principals: readonly string[] | undefined,
  functionRoleArn: string | undefined,
): void {
  if (principals === undefined) return;
  const accounts = principals.filter((p) => /^\d{12}$/.test(p));
  const producerArns = principals.filter((p) => p.startsWith('arn:'));
  const arns = functionRoleArn === undefined ? producerArns : [...producerArns, functionRoleArn];
  const allowed: IPrincipal[] = [
    ...accounts.map((a) => new AccountPrincipal(a)),
    ...producerArns.map((a) => new ArnPrincipal(a)),
  ];
  queue.addToResourcePolicy(
    new PolicyStatement({
      sid: 'ProducerMaySend',
      effect: Effect.ALLOW,
      principals: allowed,
      actions: ['sqs:SendMessage', 'sqs:GetQueueUrl', 'sqs:GetQueueAttributes'],
      resources: [queue.queueArn],
    }),
  );
  queue.addToResourcePolicy(
    new PolicyStatement({
      sid: 'OnlyTheProducerSends',
      effect: Effect.DENY,
      principals: [new AnyPrincipal()],
      actions: ['sqs:SendMessage'],
      resources: [queue.queueArn],
      conditions: {
        ...(accounts.length === 0 ? {} : { StringNotEquals: { 'aws:PrincipalAccount': accounts } }),
        ...(arns.length === 0 ? {} : { ArnNotLike: { 'aws:PrincipalArn': arns } }),
      },
    }),
  );
}
