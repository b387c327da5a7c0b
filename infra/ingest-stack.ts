import { fileURLToPath } from 'node:url';
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps, Tags, Validations } from 'aws-cdk-lib';
import { AttributeType, BillingMode, Table } from 'aws-cdk-lib/aws-dynamodb';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
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
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import type { ResolvedEnvironment } from './config.js';
import { IngestAlarms } from './ingest-alarms.js';
import { IngestDashboard } from './ingest-dashboard.js';

/** Every object the function may touch lives under a tenant prefix `t=<tenant>/` (design.md key layout). */
export const TENANT_KEY_PATTERN = 't=*';
/** Attribute the semaphore may set for DynamoDB TTL; tidiness only, expiry never depends on it. */
export const SEMAPHORE_TTL_ATTRIBUTE = 'ttl';
const DEFAULT_ENTRY = fileURLToPath(new URL('../functions/ingest.ts', import.meta.url));

export interface IngestStackProps extends StackProps {
  readonly environment: ResolvedEnvironment;
  /** Lambda entry file. @default functions/ingest.ts of this repository */
  readonly entry?: string;
}

/**
 * SQS -> Lambda -> S3 ingestion for one environment: queue + DLQ, the ingest function, the data bucket
 * (+ access-log bucket), the semaphore table, a dashboard and alarms that notify an SNS topic.
 */
export class IngestStack extends Stack {
  readonly queue: Queue;
  readonly deadLetterQueue: Queue;
  readonly bucket: Bucket;
  readonly accessLogsBucket: Bucket;
  readonly table: Table;
  readonly fn: NodejsFunction;
  readonly alarmTopic: Topic;
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
      timeToLiveAttribute: SEMAPHORE_TTL_ATTRIBUTE,
      removalPolicy,
    });

    // --- Queues --------------------------------------------------------------------------------------
    this.deadLetterQueue = new Queue(this, 'DeadLetterQueue', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(retention.dlqDays),
      removalPolicy,
    });
    this.queue = new Queue(this, 'IngestQueue', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(retention.queueDays),
      // AWS guidance for SQS event sources: at least 6x the function timeout plus the batching window, so a
      // batch still being retried by the poller is not handed to a second invocation.
      visibilityTimeout: Duration.seconds(6 * config.timeoutSeconds + config.maxBatchingWindowSeconds),
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: config.maxReceiveCount },
      removalPolicy,
    });

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
        DLQ_URL: this.deadLetterQueue.queueUrl,
        SEMAPHORE_TABLE: this.table.tableName,
        RESOURCES: JSON.stringify(config.resources),
        POOL_CONCURRENCY: String(config.poolConcurrency),
        S3_PREFIX_WRITE_RATE: String(config.s3PrefixWriteRate),
        POWERTOOLS_SERVICE_NAME: config.serviceName,
        POWERTOOLS_METRICS_NAMESPACE: config.metricsNamespace,
        POWERTOOLS_LOG_LEVEL: config.logLevel,
        NODE_OPTIONS: '--enable-source-maps',
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
        // (maxAttempts 1, maxSockets = pool size, SlowDown error shape) is measured against the pinned
        // @aws-sdk/* and @smithy/node-http-handler versions, and mixing a bundled handler with the
        // runtime's SDK can pair mismatched @smithy internals. Tree-shaking keeps the cost small.
        externalModules: [],
        minify: true,
        sourceMap: true,
        sourcesContent: false,
      },
    });

    this.fn.addEventSource(
      new SqsEventSource(this.queue, {
        batchSize: config.batchSize,
        maxBatchingWindow:
          config.maxBatchingWindowSeconds > 0 ? Duration.seconds(config.maxBatchingWindowSeconds) : undefined,
        reportBatchItemFailures: true,
        maxConcurrency: config.maxConcurrency,
      }),
    );

    // --- Least-privilege grants (the event source mapping already granted consume on the ingest queue) ----
    this.deadLetterQueue.grantSendMessages(role);
    this.table.grant(
      role,
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
      'dynamodb:DeleteItem',
      'dynamodb:Query',
    );
    role.addToPrincipalPolicy(
      new PolicyStatement({
        sid: 'TenantObjects',
        actions: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'],
        resources: [this.bucket.arnForObjects(TENANT_KEY_PATTERN)],
      }),
    );
    // Listing lets S3 answer 404 (not 403) for a missing record, and Database.list pages a tenant prefix;
    // the condition keeps it to tenant prefixes.
    role.addToPrincipalPolicy(
      new PolicyStatement({
        sid: 'ListTenantPrefixes',
        actions: ['s3:ListBucket'],
        resources: [this.bucket.bucketArn],
        conditions: { StringLike: { 's3:prefix': [TENANT_KEY_PATTERN] } },
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
    if (config.alarms.email !== undefined) {
      this.alarmTopic.addSubscription(new EmailSubscription(config.alarms.email));
    }
    this.alarms = new IngestAlarms(this, 'Alarms', {
      config,
      queue: this.queue,
      deadLetterQueue: this.deadLetterQueue,
      fn: this.fn,
      topic: this.alarmTopic,
    });
    this.dashboard = new IngestDashboard(this, 'Dashboard', {
      config,
      dashboardName: `${config.serviceName}-${envName}`,
      queue: this.queue,
      deadLetterQueue: this.deadLetterQueue,
      fn: this.fn,
      alarms: this.alarms.all,
    });

    // --- Outputs -------------------------------------------------------------------------------------
    new CfnOutput(this, 'QueueUrl', { value: this.queue.queueUrl, description: 'Send ingest messages here' });
    new CfnOutput(this, 'DeadLetterQueueUrl', { value: this.deadLetterQueue.queueUrl });
    new CfnOutput(this, 'BucketName', { value: this.bucket.bucketName });
    new CfnOutput(this, 'SemaphoreTableName', { value: this.table.tableName });
    new CfnOutput(this, 'DashboardUrl', { value: this.dashboard.url });
    new CfnOutput(this, 'AlarmTopicArn', {
      value: this.alarmTopic.topicArn,
      description: 'Subscribe to alarms',
    });
  }
}
