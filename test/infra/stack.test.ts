import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { ALARM_IDS, ALARM_SEVERITIES, type AlarmId, runbookLink } from '../../infra/alarm-catalogue.js';
import { type BuiltApp, buildApp } from '../../infra/build-app.js';
import { tombstoneHorizonDays } from '../../infra/config.js';
import { TENANT_KEY_PATTERN } from '../../infra/ingest-stack.js';
import {
  INGEST_CATALOGUE_METRIC_NAMES,
  type IngestCatalogueMetricName,
} from '../../lib/ingest/metric-names.js';
import { fileTempDirs } from '../support/temp-dir.js';
import { cdkJsonContext, TEST_PAGE_EMAIL, TEST_TICKET_EMAIL, withDeploySettings } from './cdk-context.js';

/** Where each app synthesizes (CDK's default is a new directory under the OS's temp directory per app). */
const appOutdir = fileTempDirs('cdk');

const ENVIRONMENTS = ['dev', 'staging', 'prod'] as const;
type EnvName = (typeof ENVIRONMENTS)[number];

interface Built extends BuiltApp {
  readonly template: Template;
  readonly json: CfnTemplate;
}
interface CfnResource {
  Type: string;
  Properties?: Record<string, unknown>;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
}
interface CfnTemplate {
  Resources: Record<string, CfnResource>;
  Outputs?: Record<string, unknown>;
}
interface Statement {
  Effect: 'Allow' | 'Deny';
  Action: string | string[];
  Resource: unknown;
  Condition?: Record<string, Record<string, unknown>>;
  Sid?: string;
}

/**
 * The app as `cdk synth` builds it, minus two costs that say nothing about the template: esbuild bundling
 * (about 3 s a stack on a loaded 2-core box, and the same for every environment; the 'function bundle'
 * test below bundles for real) and the built-in CloudFormation schema validation (reports warnings only).
 */
function testApp(
  envName: EnvName,
  bundle = false,
  context: Record<string, unknown> = withDeploySettings(cdkJsonContext()),
): BuiltApp {
  return buildApp({
    outdir: appOutdir(),
    envName,
    context: bundle ? context : { ...context, 'aws:cdk:bundling-stacks': [] },
    builtinCloudFormationValidation: false,
    processEnv: {},
  });
}

// Build each environment once and share it across the file.
const built = new Map<EnvName, Built>();
beforeAll(() => {
  for (const envName of ENVIRONMENTS) {
    const app = testApp(envName);
    const template = Template.fromStack(app.stack);
    built.set(envName, { ...app, template, json: template.toJSON() as CfnTemplate });
  }
});

function env(name: EnvName): Built {
  const b = built.get(name);
  if (b === undefined) throw new Error(`stack ${name} was not built`);
  return b;
}

const asArray = <T>(v: T | T[]): T[] => (Array.isArray(v) ? v : [v]);

function resourcesOfType(t: CfnTemplate, type: string): [string, CfnResource][] {
  return Object.entries(t.Resources).filter(([, r]) => r.Type === type);
}

function only(t: CfnTemplate, type: string): [string, CfnResource] {
  const found = resourcesOfType(t, type);
  expect(found, type).toHaveLength(1);
  return found[0]!;
}

function logicalId(b: Built, construct: { node: { defaultChild?: unknown } }): string {
  return b.stack.getLogicalId(construct.node.defaultChild as Parameters<typeof b.stack.getLogicalId>[0]);
}

/** Every statement of every identity policy (AWS::IAM::Policy and role inline policies). */
function identityStatements(t: CfnTemplate): Statement[] {
  const docs: { Statement: Statement[] }[] = [];
  for (const [, r] of resourcesOfType(t, 'AWS::IAM::Policy'))
    docs.push(r.Properties?.PolicyDocument as never);
  for (const [, r] of resourcesOfType(t, 'AWS::IAM::ManagedPolicy'))
    docs.push(r.Properties?.PolicyDocument as never);
  for (const [, r] of resourcesOfType(t, 'AWS::IAM::Role')) {
    for (const p of (r.Properties?.Policies as { PolicyDocument: { Statement: Statement[] } }[]) ?? []) {
      docs.push(p.PolicyDocument);
    }
  }
  return docs.flatMap((d) => d.Statement);
}

/** The CloudFormation reference of a resource attribute as it appears in a policy. */
const getAtt = (id: string, attr = 'Arn') => ({ 'Fn::GetAtt': [id, attr] });

/** The template with everything that changes with the handler's code (asset hashes) masked. */
function maskedTemplate(t: CfnTemplate): unknown {
  const text = JSON.stringify(t).replace(/[0-9a-f]{64}/g, '[asset-hash]');
  return JSON.parse(text);
}

/** The dashboard body with CloudFormation tokens (region, queue names) replaced by a placeholder. */
function dashboardWidgets(t: CfnTemplate): { properties?: { metrics?: unknown[][] } }[] {
  const [, dashboard] = only(t, 'AWS::CloudWatch::Dashboard');
  const body = dashboard.Properties!.DashboardBody as { 'Fn::Join': [string, unknown[]] };
  const text = body['Fn::Join'][1].map((part) => (typeof part === 'string' ? part : 'TOKEN')).join('');
  return (JSON.parse(text) as { widgets: { properties?: { metrics?: unknown[][] } }[] }).widgets;
}

/** Every metric a dashboard graph plots: literal metrics, and the MetricName of SEARCH expressions. */
function dashboardMetrics(t: CfnTemplate): { namespace: string; name: string; stat?: string }[] {
  return dashboardWidgets(t).flatMap((w) =>
    (w.properties?.metrics ?? []).flatMap((row) => {
      const options = row.at(-1) as { expression?: string; stat?: string };
      if (typeof row[0] === 'object' && options.expression !== undefined) {
        const search = /^SEARCH\('\{([^,]+),[^}]*\} MetricName="([^"]+)"/.exec(options.expression);
        return search === null ? [] : [{ namespace: search[1]!, name: search[2]! }];
      }
      return [{ namespace: row[0] as string, name: row[1] as string, stat: options.stat }];
    }),
  );
}

describe.each(ENVIRONMENTS)('IngestStack (%s)', (envName) => {
  const b = () => env(envName);
  const cfg = () => b().environment.config;

  it('has one function, ingest + dead-letter + rejected queue, two buckets, table, page + ticket topic, dashboard', () => {
    const t = b().template;
    t.resourceCountIs('AWS::Lambda::Function', 1);
    t.resourceCountIs('AWS::SQS::Queue', 3);
    t.resourceCountIs('AWS::S3::Bucket', 2);
    t.resourceCountIs('AWS::DynamoDB::Table', 1);
    t.resourceCountIs('AWS::SNS::Topic', 2);
    t.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
  });

  describe('queues', () => {
    it('encrypts both queues and redrives to a DLQ that keeps messages longer', () => {
      const { json, stack } = b();
      const queue = json.Resources[logicalId(b(), stack.queue)]!.Properties!;
      const dlqId = logicalId(b(), stack.deadLetterQueue);
      const dlq = json.Resources[dlqId]!.Properties!;
      expect(queue.SqsManagedSseEnabled).toBe(true);
      expect(dlq.SqsManagedSseEnabled).toBe(true);
      const redrive = queue.RedrivePolicy as { deadLetterTargetArn: unknown; maxReceiveCount: number };
      expect(redrive.deadLetterTargetArn).toEqual(getAtt(dlqId));
      expect(redrive.maxReceiveCount).toBeGreaterThanOrEqual(5);
      expect(redrive.maxReceiveCount).toBe(cfg().maxReceiveCount);
      expect(dlq.MessageRetentionPeriod as number).toBeGreaterThan(queue.MessageRetentionPeriod as number);
      expect(queue.MessageRetentionPeriod).toBe(cfg().retention.queueDays * 86_400);
    });

    it('keeps rejected messages apart from dead letters, encrypted, as long as dead letters', () => {
      const { json, stack } = b();
      const rejected = json.Resources[logicalId(b(), stack.rejectedQueue)]!.Properties!;
      expect(rejected.SqsManagedSseEnabled).toBe(true);
      expect(rejected.MessageRetentionPeriod).toBe(cfg().retention.dlqDays * 86_400);
      // Nothing redrives into it: SQS fills the dead-letter queue, the function fills this one.
      const redrive = json.Resources[logicalId(b(), stack.queue)]!.Properties!.RedrivePolicy as {
        deadLetterTargetArn: unknown;
      };
      expect(redrive.deadLetterTargetArn).not.toEqual(getAtt(logicalId(b(), stack.rejectedQueue)));
    });

    it('sets visibility timeout >= 6x the function timeout plus the batching window', () => {
      const { json, stack } = b();
      const [, fn] = only(json, 'AWS::Lambda::Function');
      const [, esm] = only(json, 'AWS::Lambda::EventSourceMapping');
      const queue = json.Resources[logicalId(b(), stack.queue)]!.Properties!;
      const timeout = fn.Properties!.Timeout as number;
      const window = (esm.Properties!.MaximumBatchingWindowInSeconds as number | undefined) ?? 0;
      expect(queue.VisibilityTimeout as number).toBeGreaterThanOrEqual(6 * timeout + window);
    });

    it('denies every non-TLS request on both queues', () => {
      const { json, stack } = b();
      for (const q of [stack.queue, stack.deadLetterQueue, stack.rejectedQueue]) {
        const id = logicalId(b(), q);
        const policies = resourcesOfType(json, 'AWS::SQS::QueuePolicy').filter(([, p]) =>
          JSON.stringify(p.Properties!.Queues).includes(id),
        );
        const statements = policies.flatMap(
          ([, p]) => (p.Properties!.PolicyDocument as { Statement: Statement[] }).Statement,
        );
        expect(statements).toContainEqual(
          expect.objectContaining({
            Effect: 'Deny',
            Action: 'sqs:*',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
            Resource: getAtt(id),
          }),
        );
      }
    });
  });

  describe('function', () => {
    it('runs nodejs22.x or newer on arm64 with memory and timeout from config', () => {
      const [, fn] = only(b().json, 'AWS::Lambda::Function');
      const p = fn.Properties!;
      const major = Number(/^nodejs(\d+)\.x$/.exec(p.Runtime as string)?.[1]);
      expect(major).toBeGreaterThanOrEqual(22);
      expect(p.Architectures).toEqual(['arm64']);
      expect(p.MemorySize).toBe(cfg().memoryMb);
      expect(p.Timeout).toBe(cfg().timeoutSeconds);
      expect(p.Handler).toBe('index.handler');
    });

    it('passes the configuration contract and the Powertools settings in its environment', () => {
      const { json, stack } = b();
      const [, fn] = only(json, 'AWS::Lambda::Function');
      const vars = (fn.Properties!.Environment as { Variables: Record<string, unknown> }).Variables;
      expect(vars.BUCKET_NAME).toEqual({ Ref: logicalId(b(), stack.bucket) });
      // The handler's DLQ_URL is where it sends what it refuses: the rejected queue.
      expect(vars.DLQ_URL).toEqual({ Ref: logicalId(b(), stack.rejectedQueue) });
      expect(vars.SEMAPHORE_TABLE).toEqual({ Ref: logicalId(b(), stack.table) });
      expect(JSON.parse(vars.RESOURCES as string)).toEqual(cfg().resources);
      // Only an environment that shards a resource sets RESOURCE_SHARDS (cdk.json: prod's events).
      if (cfg().resourceShards === undefined) expect(vars.RESOURCE_SHARDS).toBeUndefined();
      else expect(JSON.parse(vars.RESOURCE_SHARDS as string)).toEqual(cfg().resourceShards);
      expect(vars.POOL_CONCURRENCY).toBe(String(cfg().poolConcurrency));
      expect(vars.S3_PREFIX_WRITE_RATE).toBe(String(cfg().s3PrefixWriteRate));
      expect(vars.POWERTOOLS_SERVICE_NAME).toBe(cfg().serviceName);
      expect(vars.POWERTOOLS_METRICS_NAMESPACE).toBe(`${cfg().metricsNamespace}/${envName}`);
      expect(vars.POWERTOOLS_LOG_LEVEL).toBe(cfg().logLevel);
      // The function checks its deadline margin against its timeout at cold start.
      expect(vars.FUNCTION_TIMEOUT_SECONDS).toBe(String(cfg().timeoutSeconds));
    });

    it('consumes the ingest queue with partial batch responses and config-driven batching', () => {
      const { json, stack } = b();
      const [, esm] = only(json, 'AWS::Lambda::EventSourceMapping');
      const p = esm.Properties!;
      expect(p.EventSourceArn).toEqual(getAtt(logicalId(b(), stack.queue)));
      expect(p.FunctionResponseTypes).toEqual(['ReportBatchItemFailures']);
      expect(p.BatchSize).toBe(cfg().batchSize);
      expect((p.MaximumBatchingWindowInSeconds as number | undefined) ?? 0).toBe(
        cfg().maxBatchingWindowSeconds,
      );
      expect(p.ScalingConfig).toEqual({ MaximumConcurrency: cfg().maxConcurrency });
      expect(p.Enabled).toBe(true);
    });

    it('reserves at least the event source maximum concurrency', () => {
      const [, fn] = only(b().json, 'AWS::Lambda::Function');
      const [, esm] = only(b().json, 'AWS::Lambda::EventSourceMapping');
      const max = (esm.Properties!.ScalingConfig as { MaximumConcurrency: number }).MaximumConcurrency;
      expect(fn.Properties!.ReservedConcurrentExecutions as number).toBeGreaterThanOrEqual(max);
      expect(fn.Properties!.ReservedConcurrentExecutions).toBe(cfg().reservedConcurrency);
    });

    it('writes to its own log group with the configured retention', () => {
      const { json } = b();
      const [logId, logs] = only(json, 'AWS::Logs::LogGroup');
      const [, fn] = only(json, 'AWS::Lambda::Function');
      expect(fn.Properties!.LoggingConfig).toEqual({ LogGroup: { Ref: logId } });
      expect(logs.Properties!.RetentionInDays).toBe(cfg().retention.logDays);
    });
  });

  describe('bucket', () => {
    it('encrypts at rest, blocks public access, logs access and enforces TLS', () => {
      const { json, stack } = b();
      const dataId = logicalId(b(), stack.bucket);
      const logsId = logicalId(b(), stack.accessLogsBucket);
      for (const id of [dataId, logsId]) {
        const p = json.Resources[id]!.Properties!;
        const rules = (p.BucketEncryption as { ServerSideEncryptionConfiguration: unknown[] })
          .ServerSideEncryptionConfiguration;
        expect(rules).toContainEqual({
          ServerSideEncryptionByDefault: { SSEAlgorithm: expect.stringMatching(/^(AES256|aws:kms)$/) },
        });
        expect(p.PublicAccessBlockConfiguration).toEqual({
          BlockPublicAcls: true,
          BlockPublicPolicy: true,
          IgnorePublicAcls: true,
          RestrictPublicBuckets: true,
        });
        const policy = resourcesOfType(json, 'AWS::S3::BucketPolicy').find(
          ([, r]) => JSON.stringify(r.Properties!.Bucket) === JSON.stringify({ Ref: id }),
        );
        expect(policy, `bucket policy of ${id}`).toBeDefined();
        const statements = (policy![1].Properties!.PolicyDocument as { Statement: Statement[] }).Statement;
        expect(statements).toContainEqual(
          expect.objectContaining({
            Effect: 'Deny',
            Action: 's3:*',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
        );
      }
      expect(json.Resources[dataId]!.Properties!.LoggingConfiguration).toEqual({
        DestinationBucketName: { Ref: logsId },
        LogFilePrefix: 'data-bucket/',
      });
    });

    it('versions and expires per environment', () => {
      const { json, stack } = b();
      const p = json.Resources[logicalId(b(), stack.bucket)]!.Properties!;
      const rules = (p.LifecycleConfiguration as { Rules: Record<string, unknown>[] }).Rules;
      expect(rules).toContainEqual(
        expect.objectContaining({
          AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
          Status: 'Enabled',
        }),
      );
      // Tombstones and pending partials (tagged by lib/db) expire after the horizon (issue 15).
      expect(rules).toContainEqual(
        expect.objectContaining({
          Id: 'expire-tombstones',
          TagFilters: [{ Key: 's3-ingest-state', Value: 'hidden' }],
          ExpirationInDays: tombstoneHorizonDays(cfg().retention),
          Status: 'Enabled',
        }),
      );
      expect(tombstoneHorizonDays(cfg().retention)).toBeGreaterThan(
        cfg().retention.queueDays + cfg().retention.dlqDays,
      );
      if (cfg().versioning) {
        expect(p.VersioningConfiguration).toEqual({ Status: 'Enabled' });
        expect(rules).toContainEqual(
          expect.objectContaining({
            NoncurrentVersionExpiration: { NoncurrentDays: cfg().retention.noncurrentVersionDays },
          }),
        );
      } else {
        expect(p.VersioningConfiguration).toBeUndefined();
      }
    });

    it('retains data outside dev', () => {
      const { json, stack } = b();
      const expected = envName === 'dev' ? 'Delete' : 'Retain';
      for (const c of [
        stack.bucket,
        stack.accessLogsBucket,
        stack.table,
        stack.deadLetterQueue,
        stack.rejectedQueue,
      ]) {
        const r = json.Resources[logicalId(b(), c)]!;
        expect(r.DeletionPolicy, c.node.path).toBe(expected);
        expect(r.UpdateReplacePolicy, c.node.path).toBe(expected);
      }
    });
  });

  it('creates the semaphore table on demand with point-in-time recovery and no TTL attribute', () => {
    const [, table] = only(b().json, 'AWS::DynamoDB::Table');
    expect(table.Properties).toMatchObject({
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      AttributeDefinitions: [
        { AttributeName: 'pk', AttributeType: 'S' },
        { AttributeName: 'sk', AttributeType: 'S' },
      ],
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    });
    // The semaphore never writes a TTL attribute (leases expire by their `until`).
    expect(table.Properties!.TimeToLiveSpecification).toBeUndefined();
  });

  describe('IAM', () => {
    it('grants no wildcard action and no "*" resource', () => {
      const statements = identityStatements(b().json);
      expect(statements.length).toBeGreaterThan(0);
      for (const s of statements) {
        for (const action of asArray(s.Action)) expect(action, JSON.stringify(s)).not.toContain('*');
        for (const resource of asArray(s.Resource)) expect(resource, JSON.stringify(s)).not.toBe('*');
      }
    });

    it('attaches no managed policy to the function role', () => {
      const [, role] = only(b().json, 'AWS::IAM::Role');
      expect(role.Properties!.ManagedPolicyArns).toBeUndefined();
    });

    it('allows object access only under t=* of its own bucket', () => {
      const { json, stack } = b();
      const bucketArn = getAtt(logicalId(b(), stack.bucket));
      const s3 = identityStatements(json).filter((s) => asArray(s.Action).some((a) => a.startsWith('s3:')));
      const objectStatements = s3.filter((s) => asArray(s.Action).some((a) => a.endsWith('Object')));
      expect(objectStatements).toHaveLength(1);
      const [objects] = objectStatements;
      expect(asArray(objects!.Action).sort()).toEqual([
        's3:DeleteObject',
        's3:GetObject',
        's3:PutObject',
        's3:PutObjectTagging',
      ]);
      expect(objects!.Resource).toEqual({ 'Fn::Join': ['', [bucketArn, `/${TENANT_KEY_PATTERN}`]] });
      const others = s3.filter((s) => s !== objects);
      expect(others).toEqual([expect.objectContaining({ Action: 's3:ListBucket', Resource: bucketArn })]);
    });

    it('lets a GetObject of a missing key read as 404: ListBucket carries no condition GetObject cannot meet', () => {
      // S3 answers 404 rather than 403 only to a caller allowed s3:ListBucket; a GetObject request has no
      // s3:prefix key, so a ListBucket grant conditioned on s3:prefix would not count (infra/README.md).
      const list = identityStatements(b().json).filter((s) => asArray(s.Action).includes('s3:ListBucket'));
      expect(list).toHaveLength(1);
      expect(list[0]!.Effect).toBe('Allow');
      expect(list[0]!.Condition).toBeUndefined();
    });

    it('uses only its own table and queues', () => {
      const { json, stack } = b();
      const statements = identityStatements(json);
      const byService = (prefix: string) =>
        statements.filter((s) => asArray(s.Action).some((a) => a.startsWith(prefix)));

      const dynamo = byService('dynamodb:');
      // Exactly the calls DynamoRateBudget makes: GetItem (a booking's read), PutItem (a new schedule),
      // UpdateItem (a booking's or a step's conditional write), read from the code that sends them so a
      // new call cannot ship without its grant (CreateTable and DescribeTable are local-only).
      const sent = readFileSync(join('lib', 'semaphore', 'dynamo-rate-budget.ts'), 'utf8');
      const calls = [...new Set([...sent.matchAll(/new (\w+)Command\(/g)].map((m) => `dynamodb:${m[1]}`))];
      expect(calls.sort()).toEqual(['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem']);
      expect(dynamo.flatMap((s) => asArray(s.Action)).sort()).toEqual(calls.sort());
      const tableArn = getAtt(logicalId(b(), stack.table));
      for (const s of dynamo) for (const r of asArray(s.Resource)) expect(r).toEqual(tableArn);

      const queueArn = getAtt(logicalId(b(), stack.queue));
      const dlqArn = getAtt(logicalId(b(), stack.deadLetterQueue));
      const rejectedArn = getAtt(logicalId(b(), stack.rejectedQueue));
      const sqs = byService('sqs:');
      const actionsOn = (arn: unknown) =>
        sqs.filter((s) => asArray(s.Resource).some((r) => JSON.stringify(r) === JSON.stringify(arn)));
      for (const s of sqs) {
        for (const r of asArray(s.Resource)) expect([queueArn, rejectedArn]).toContainEqual(r);
      }
      const onQueue = actionsOn(queueArn).flatMap((s) => asArray(s.Action));
      expect(onQueue).toEqual(
        expect.arrayContaining(['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility']),
      );
      // Deferred records: the function re-sends a record that did not get its turn to the queue it came from.
      const defer = sqs.filter((s) => s.Sid === 'DeferRecords');
      expect(defer).toEqual([
        expect.objectContaining({ Effect: 'Allow', Action: 'sqs:SendMessage', Resource: queueArn }),
      ]);
      expect(onQueue.filter((a) => a === 'sqs:SendMessage')).toHaveLength(1);
      // SQS itself moves messages to the dead-letter queue: the function needs nothing on it.
      expect(actionsOn(dlqArn)).toEqual([]);
      expect(actionsOn(rejectedArn).flatMap((s) => asArray(s.Action))).toEqual(['sqs:SendMessage']);
    });

    it('lets the function write only to its own log group', () => {
      const { json } = b();
      const [logId] = only(json, 'AWS::Logs::LogGroup');
      const logs = identityStatements(json).filter((s) =>
        asArray(s.Action).some((a) => a.startsWith('logs:')),
      );
      expect(logs.length).toBeGreaterThan(0);
      for (const s of logs) expect(s.Resource).toEqual(getAtt(logId));
    });
  });

  describe('alarms', () => {
    const alarm = (id: AlarmId) => {
      const { json, stack } = b();
      const r = json.Resources[logicalId(b(), stack.alarms.byId[id])];
      expect(r?.Type).toBe('AWS::CloudWatch::Alarm');
      return r!.Properties!;
    };
    const topicRef = (severity: 'page' | 'ticket') => ({
      Ref: logicalId(b(), severity === 'page' ? b().stack.alarmTopic : b().stack.ticketTopic),
    });
    const runbooks = readFileSync(new URL('../../docs/runbooks.md', import.meta.url), 'utf8');
    const queueName = (q: 'queue' | 'deadLetterQueue' | 'rejectedQueue') => [
      { Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(b(), b().stack[q]), 'QueueName'] } },
    ];
    /** The alarm's metric-math inputs, by id: [namespace, metric name]. */
    const mathInputs = (id: AlarmId) => {
      const metrics = alarm(id).Metrics as {
        Id: string;
        Expression?: string;
        MetricStat?: { Metric: { MetricName: string; Namespace: string; Dimensions: unknown } };
      }[];
      const expression = metrics.find((m) => m.Expression !== undefined)!.Expression!;
      const inputs = metrics.filter((m) => m.MetricStat);
      const idOf = (name: string) => inputs.find((m) => m.MetricStat!.Metric.MetricName === name)!.Id;
      return { expression, inputs, idOf };
    };

    it('creates every alarm of the catalogue and nothing else', () => {
      expect(resourcesOfType(b().json, 'AWS::CloudWatch::Alarm')).toHaveLength(ALARM_IDS.length);
    });

    it.each(ALARM_IDS)(
      '%s notifies its severity topic on ALARM and OK, and links its runbook section',
      (id) => {
        const p = alarm(id);
        const severity = ALARM_SEVERITIES[id];
        expect(p.AlarmActions).toEqual([topicRef(severity)]);
        expect(p.OKActions).toEqual([topicRef(severity)]);
        const description = p.AlarmDescription as string;
        expect(description.startsWith(`[${severity}] `)).toBe(true);
        expect(description).toContain(`Runbook: ${runbookLink(cfg().runbookBaseUrl, id)}`);
        // Outside dev the link opens from a mail or a pager: absolute.
        if (envName !== 'dev') expect(description).toMatch(/ Runbook: https:\/\/\S+\/docs\/runbooks\.md#/);
        expect(runbooks).toMatch(new RegExp(`^## ${id}$`, 'm'));
        expect(p.TreatMissingData).toBe('notBreaching');
      },
    );

    it('alarms on new dead letters (arrivals), not on depth, so a second incident notifies again', () => {
      const p = alarm('DeadLettersArrived');
      const { expression, inputs } = mathInputs('DeadLettersArrived');
      expect(inputs).toHaveLength(1);
      expect(inputs[0]!.MetricStat!.Metric).toMatchObject({
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Dimensions: queueName('deadLetterQueue'),
      });
      expect(expression).toBe(`DIFF(FILL(${inputs[0]!.Id}, REPEAT))`);
      expect(p).toMatchObject({ Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold' });
      expect(p.EvaluationPeriods).toBe(1);
    });

    it('tickets while the DLQ is not empty (depth), beside the arrival page, until it is empty', () => {
      expect(alarm('DeadLettersWaiting')).toMatchObject({
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Dimensions: queueName('deadLetterQueue'),
        Statistic: 'Maximum',
        Period: 300,
        Threshold: 0,
        ComparisonOperator: 'GreaterThanThreshold',
        EvaluationPeriods: 1,
      });
      expect(ALARM_SEVERITIES.DeadLettersWaiting).toBe('ticket');
      expect(ALARM_SEVERITIES.DeadLettersArrived).toBe('page');
    });

    it('alarms before a dead letter or a rejected message expires', () => {
      const threshold = cfg().retention.dlqDays * 86_400 - cfg().alarms.expiryWarningHours * 3600;
      expect(alarm('DeadLetterAge')).toMatchObject({
        MetricName: 'ApproximateAgeOfOldestMessage',
        Dimensions: queueName('deadLetterQueue'),
        Threshold: threshold,
        ComparisonOperator: 'GreaterThanThreshold',
      });
      expect(alarm('RejectedMessageAge')).toMatchObject({
        MetricName: 'ApproximateAgeOfOldestMessage',
        Dimensions: queueName('rejectedQueue'),
        Threshold: threshold,
      });
    });

    it('tickets (never pages) on messages the function rejects', () => {
      expect(alarm('MessagesRejected')).toMatchObject({
        Namespace: 'AWS/SQS',
        MetricName: 'NumberOfMessagesSent',
        Dimensions: queueName('rejectedQueue'),
        Statistic: 'Sum',
        Threshold: cfg().alarms.rejectedPerMinute,
        AlarmActions: [topicRef('ticket')],
      });
    });

    it('alarms on oldest message age over the threshold', () => {
      expect(alarm('OldestMessageAge')).toMatchObject({
        MetricName: 'ApproximateAgeOfOldestMessage',
        Dimensions: queueName('queue'),
        Threshold: cfg().alarms.oldestMessageAgeSeconds,
        ComparisonOperator: 'GreaterThanThreshold',
        EvaluationPeriods: cfg().alarms.evaluationPeriods,
      });
    });

    it('alarms on function errors, throttles and duration near the timeout', () => {
      expect(alarm('FunctionErrors')).toMatchObject({
        Namespace: 'AWS/Lambda',
        MetricName: 'Errors',
        Threshold: cfg().alarms.functionErrors,
      });
      expect(alarm('FunctionThrottles')).toMatchObject({
        Namespace: 'AWS/Lambda',
        MetricName: 'Throttles',
        Threshold: cfg().alarms.functionThrottles,
      });
      expect(alarm('DurationNearTimeout')).toMatchObject({
        Namespace: 'AWS/Lambda',
        MetricName: 'Duration',
        Statistic: 'Maximum',
        Threshold: (cfg().timeoutSeconds * 1000 * cfg().alarms.durationTimeoutPercent) / 100,
      });
    });

    it('alarms on the S3 SlowDowns the function reports, in its own environment namespace', () => {
      expect(alarm('SlowDownRate')).toMatchObject({
        Namespace: `${cfg().metricsNamespace}/${envName}`,
        MetricName: 'S3SlowDowns' satisfies IngestCatalogueMetricName,
        Dimensions: [{ Name: 'service', Value: cfg().serviceName }],
        Statistic: 'Sum',
        Period: 60,
        Threshold: cfg().alarms.slowDownPerMinute,
      });
    });

    it('alarms on the pool error rate as PoolErrors / (Writes + PoolErrors)', () => {
      expect(alarm('PoolErrorRate').Threshold).toBe(cfg().alarms.poolErrorRatePercent);
      const { expression, inputs, idOf } = mathInputs('PoolErrorRate');
      expect(inputs.map((m) => m.MetricStat!.Metric.MetricName).sort()).toEqual(['PoolErrors', 'Writes']);
      for (const m of inputs)
        expect(m.MetricStat!.Metric.Namespace).toBe(`${cfg().metricsNamespace}/${envName}`);
      const [errors, writes] = [idOf('PoolErrors'), idOf('Writes')];
      expect(expression).toBe(`100 * FILL(${errors}, 0) / (FILL(${writes}, 0) + FILL(${errors}, 0))`);
    });

    it('alarms on the share of records returned for redelivery (invisible in Lambda Errors)', () => {
      expect(alarm('RecordsFailedRate').Threshold).toBe(cfg().alarms.recordsFailedPercent);
      const { expression, idOf } = mathInputs('RecordsFailedRate');
      const [failed, processed, rejected] = ['RecordsFailed', 'RecordsProcessed', 'RecordsDeadLettered'].map(
        idOf,
      );
      expect(expression).toBe(
        `100 * FILL(${failed}, 0) / (FILL(${processed}, 0) + FILL(${failed}, 0) + FILL(${rejected}, 0))`,
      );
    });

    it('alarms on semaphore throttles and errors together', () => {
      expect(alarm('SemaphoreErrors').Threshold).toBe(cfg().alarms.semaphoreErrorsPerMinute);
      const { expression, idOf } = mathInputs('SemaphoreErrors');
      expect(expression).toBe(`FILL(${idOf('SemaphoreThrottles')}, 0) + FILL(${idOf('SemaphoreErrors')}, 0)`);
    });

    it('subscribes the configured addresses: pages and tickets apart', () => {
      const subscriptions = resourcesOfType(b().json, 'AWS::SNS::Subscription').map(([, r]) => r.Properties!);
      if (envName === 'dev') {
        expect(subscriptions).toEqual([]);
        return;
      }
      expect(subscriptions).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            Protocol: 'email',
            Endpoint: TEST_PAGE_EMAIL,
            TopicArn: topicRef('page'),
          }),
          expect.objectContaining({
            Protocol: 'email',
            Endpoint: TEST_TICKET_EMAIL,
            TopicArn: topicRef('ticket'),
          }),
        ]),
      );
      expect(subscriptions).toHaveLength(2);
    });
  });

  it('charts queues, DLQ, rejected queue, function and every metric of the catalogue', () => {
    const charted = dashboardMetrics(b().json);
    const names = new Set(charted.map((m) => m.name));
    for (const m of [
      'ApproximateNumberOfMessagesVisible',
      'ApproximateAgeOfOldestMessage',
      'NumberOfMessagesSent',
      'Invocations',
      'Errors',
      'Throttles',
      'Duration',
    ]) {
      expect(names, m).toContain(m);
    }
    for (const m of INGEST_CATALOGUE_METRIC_NAMES) expect(names, m).toContain(m);
    const own = charted.filter((m) => !m.namespace.startsWith('AWS/'));
    expect(new Set(own.map((m) => m.namespace))).toEqual(new Set([`${cfg().metricsNamespace}/${envName}`]));
  });

  it('plots fleet p95/p99 of the latency samples (not the maximum of per-invocation percentiles)', () => {
    const charted = dashboardMetrics(b().json);
    for (const m of ['QueueWaitMs', 'ExecutionMs', 'BookingWaitMs'] satisfies IngestCatalogueMetricName[]) {
      expect(charted.filter((c) => c.name === m).map((c) => c.stat)).toEqual(['p95', 'p99']);
    }
    expect(charted.map((c) => c.name).filter((n) => /P(50|95|99)$/.test(n))).toEqual([]);
  });

  it('outputs the queue URLs, bucket, table and dashboard URL', () => {
    const outputs = b().json.Outputs ?? {};
    for (const name of [
      'QueueUrl',
      'DeadLetterQueueUrl',
      'RejectedQueueUrl',
      'AlarmTopicArn',
      'TicketTopicArn',
      'BucketName',
      'SemaphoreTableName',
      'DashboardUrl',
    ]) {
      expect(outputs, name).toHaveProperty(name);
    }
    expect(JSON.stringify(outputs.DashboardUrl)).toContain(
      `#dashboards:name=${cfg().serviceName}-${envName}`,
    );
  });

  it('passes cdk-nag AwsSolutions with no unacknowledged finding', () => {
    const report = new AwsSolutionsChecks().validateScope(b().app);
    expect(report.violations.map((v) => `${v.ruleName}: ${v.description}`)).toEqual([]);
    expect(report.success).toBe(true);
  });

  it('matches the template snapshot (asset hashes masked)', () => {
    expect(maskedTemplate(b().json)).toMatchSnapshot();
  });
});

/** cdk.json's context (with test subscribers) with one environment's block patched. */
function contextPatching(
  envName: EnvName,
  patch: (block: Record<string, unknown>) => Record<string, unknown>,
) {
  const context = withDeploySettings(cdkJsonContext());
  const environments = context.environments as Record<string, Record<string, unknown>>;
  return { ...context, environments: { ...environments, [envName]: patch(environments[envName]!) } };
}

describe('environments sharing an account and region', () => {
  it('publish and read metrics in a namespace of their own', () => {
    const namespaces = ENVIRONMENTS.map((name) => {
      const [, fn] = only(env(name).json, 'AWS::Lambda::Function');
      return (fn.Properties!.Environment as { Variables: Record<string, string> }).Variables
        .POWERTOOLS_METRICS_NAMESPACE;
    });
    expect(new Set(namespaces).size).toBe(ENVIRONMENTS.length);
    ENVIRONMENTS.forEach((name, i) => {
      // Every alarm on a function metric reads the namespace that environment's function writes.
      const customNamespaces = resourcesOfType(env(name).json, 'AWS::CloudWatch::Alarm')
        .flatMap(([, a]) => [
          a.Properties!.Namespace,
          ...((a.Properties!.Metrics as { MetricStat?: { Metric: { Namespace: string } } }[]) ?? []).map(
            (m) => m.MetricStat?.Metric.Namespace,
          ),
        ])
        .filter((ns): ns is string => typeof ns === 'string' && !ns.startsWith('AWS/'));
      expect(customNamespaces.length).toBeGreaterThan(0);
      expect(new Set(customNamespaces)).toEqual(new Set([namespaces[i]]));
    });
  });
});

describe('alarm destinations', () => {
  it('refuses to build a non-dev stack whose alarms reach nobody', () => {
    expect(() => testApp('prod', false, cdkJsonContext())).toThrow(/^environments\.prod: set alarmEmail/);
  });

  it('builds prod from cdk.json as it is, given its destinations and runbook URL with -c', () => {
    const { stack } = testApp('prod', false, {
      ...cdkJsonContext(),
      alarmEmail: 'pager@example.com',
      ticketEmail: 'tickets@example.com',
      runbookBaseUrl: 'https://github.com/acme/s3-ingest/blob/main/',
    });
    const json = Template.fromStack(stack).toJSON() as CfnTemplate;
    const subscriptions = resourcesOfType(json, 'AWS::SNS::Subscription').map(([, r]) => r.Properties);
    expect(subscriptions).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ Protocol: 'email', Endpoint: 'pager@example.com' }),
        expect.objectContaining({ Protocol: 'email', Endpoint: 'tickets@example.com' }),
      ]),
    );
    for (const [, a] of resourcesOfType(json, 'AWS::CloudWatch::Alarm')) {
      expect(a.Properties!.AlarmDescription).toMatch(
        /Runbook: https:\/\/github\.com\/acme\/s3-ingest\/blob\/main\/docs\/runbooks\.md#[a-z]+$/,
      );
    }
  });

  it('notifies existing topics (PagerDuty, Chatbot) by severity when their ARNs are configured', () => {
    const page = 'arn:aws:sns:eu-west-1:123456789012:pagerduty';
    const ticket = 'arn:aws:sns:eu-west-1:123456789012:tickets';
    const { stack } = testApp(
      'staging',
      false,
      contextPatching('staging', (block) => ({
        ...block,
        alarms: { topicArn: page, ticketTopicArn: ticket },
      })),
    );
    const json = Template.fromStack(stack).toJSON() as CfnTemplate;
    const ref = (t: { node: { defaultChild?: unknown } }) => ({
      Ref: stack.getLogicalId(t.node.defaultChild as Parameters<typeof stack.getLogicalId>[0]),
    });
    for (const id of ALARM_IDS) {
      const a = json.Resources[stack.getLogicalId(stack.alarms.byId[id].node.defaultChild as never)]!;
      const expected =
        ALARM_SEVERITIES[id] === 'page' ? [ref(stack.alarmTopic), page] : [ref(stack.ticketTopic), ticket];
      expect(a.Properties!.AlarmActions, id).toEqual(expected);
      expect(a.Properties!.OKActions, id).toEqual(expected);
    }
    expect(resourcesOfType(json, 'AWS::SNS::Subscription')).toEqual([]);
  });
});

describe('pausing ingestion', () => {
  it('disables the event source mapping when ingestionEnabled is false (messages wait, none burn receives)', () => {
    const { stack } = testApp(
      'prod',
      false,
      contextPatching('prod', (block) => ({ ...block, ingestionEnabled: false })),
    );
    const [, esm] = only(
      Template.fromStack(stack).toJSON() as CfnTemplate,
      'AWS::Lambda::EventSourceMapping',
    );
    expect(esm.Properties!.Enabled).toBe(false);
    // The function keeps its reserved concurrency: pausing is the mapping's job, not a throttle to 0.
    const [, fn] = only(Template.fromStack(stack).toJSON() as CfnTemplate, 'AWS::Lambda::Function');
    expect(fn.Properties!.ReservedConcurrentExecutions).toBeGreaterThan(0);
  });
});

describe('cdk-nag wiring', () => {
  it('fails synth on a finding, so nothing slips through an unchecked path', () => {
    const { app, stack } = testApp('dev');
    new Queue(stack, 'NoTlsNoDlq', { enforceSSL: false });
    expect(() => app.synth()).toThrow(/AwsSolutions-SQS4/);
  });

  it('acknowledges only findings that exist, each with a written reason', () => {
    const acknowledged: { id: string; reason: string }[] = [];
    const spy = vi.spyOn(Validations.prototype, 'acknowledge').mockImplementation((...rules) => {
      acknowledged.push(...rules);
    });
    try {
      const { app } = testApp('prod');
      const findings = new AwsSolutionsChecks().validateScope(app).violations.map((v) => v.ruleName);
      expect(acknowledged.map((a) => a.id).sort()).toEqual([...findings].sort());
      for (const a of acknowledged) expect(a.reason.length, a.id).toBeGreaterThan(40);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('function bundle', () => {
  it('is built by local esbuild as an ESM module exporting the handler', () => {
    const { app, stack } = testApp('dev', true);
    const assembly = app.synth();
    const [, fn] = only(Template.fromStack(stack).toJSON() as CfnTemplate, 'AWS::Lambda::Function');
    const key = (fn.Properties!.Code as { S3Key: string }).S3Key;
    const dir = join(assembly.directory, `asset.${key.replace(/\.zip$/, '')}`);
    expect(existsSync(join(dir, 'index.mjs')), dir).toBe(true);
    const code = readFileSync(join(dir, 'index.mjs'), 'utf8');
    expect(code.startsWith("import { createRequire } from 'node:module';")).toBe(true);
    expect(code).toMatch(/export\s*\{[^}]*\bhandler\b/);
  });
});
