// FIFO environments (issue 15) and tenant-bound producer queues (issue 19) in the template.
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { type BuiltApp, buildApp } from '../../infra/build-app.js';
import { EnvironmentConfigError } from '../../infra/config.js';
import { parseSourceTenants } from '../../lib/ingest/source-tenants.js';
import { fileTempDirs } from '../support/temp-dir.js';
import { cdkJsonContext, withDeploySettings } from './cdk-context.js';

/** Where each app synthesizes (CDK's default is a new directory under the OS's temp directory per app). */
const appOutdir = fileTempDirs('cdk');

interface CfnResource {
  Type: string;
  Properties?: Record<string, unknown>;
}
interface CfnTemplate {
  Resources: Record<string, CfnResource>;
  Outputs?: Record<string, unknown>;
}
interface Statement {
  Sid?: string;
  Effect: 'Allow' | 'Deny';
  Principal?: unknown;
  Action: string | string[];
  Resource: unknown;
  Condition?: Record<string, Record<string, unknown>>;
}

const BILLING_ROLE = 'arn:aws:iam::111122223333:role/billing-producer';
const PARTNER_ACCOUNT = '444455556666';

/** dev (or staging) with its block patched; no bundling, no CloudFormation schema validation. */
function build(patch: Record<string, unknown>, envName: 'dev' | 'staging' = 'dev'): BuiltApp {
  const context = withDeploySettings(cdkJsonContext());
  const environments = context.environments as Record<string, Record<string, unknown>>;
  return buildApp({
    outdir: appOutdir(),
    envName,
    context: {
      ...context,
      environments: { ...environments, [envName]: { ...environments[envName], ...patch } },
      'aws:cdk:bundling-stacks': [],
    },
    builtinCloudFormationValidation: false,
    processEnv: {},
  });
}

const json = (b: BuiltApp) => Template.fromStack(b.stack).toJSON() as CfnTemplate;
const ofType = (t: CfnTemplate, type: string) =>
  Object.entries(t.Resources).filter(([, r]) => r.Type === type);
const getAtt = (id: string) => ({ 'Fn::GetAtt': [id, 'Arn'] });
const logicalId = (b: BuiltApp, construct: { node: { defaultChild?: unknown } }) =>
  b.stack.getLogicalId(construct.node.defaultChild as Parameters<typeof b.stack.getLogicalId>[0]);
const asArray = <T>(v: T | T[]): T[] => (Array.isArray(v) ? v : [v]);
/** Every statement of the template's identity policies (the function role's). */
const identityStatements = (t: CfnTemplate): Statement[] =>
  ofType(t, 'AWS::IAM::Policy').flatMap(
    ([, r]) => (r.Properties!.PolicyDocument as { Statement: Statement[] }).Statement,
  );
const FIFO = { fifo: true, batchSize: 10, maxBatchingWindowSeconds: 0 };
// dev's maxConcurrency is 2: three event sources may run 6 invocations at once.
const PRODUCERS = {
  reservedConcurrency: 6,
  producers: [
    { name: 'billing', tenants: ['billing', 'billing-*'], principals: [BILLING_ROLE] },
    { name: 'partner', tenants: ['partner-eu'], principals: [PARTNER_ACCOUNT, BILLING_ROLE] },
    { name: 'open', tenants: ['open'] },
  ],
};

/** The function's SOURCE_TENANTS with each queue ARN token written as the queue's logical id. */
function sourceTenants(t: CfnTemplate): Record<string, string[]> {
  const [[, fn]] = ofType(t, 'AWS::Lambda::Function') as [[string, CfnResource]];
  const value = (fn.Properties!.Environment as { Variables: Record<string, unknown> }).Variables
    .SOURCE_TENANTS as { 'Fn::Join': [string, unknown[]] };
  const text = value['Fn::Join'][1]
    .map((part) => (typeof part === 'string' ? part : (part as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0]))
    .join('');
  return JSON.parse(text) as Record<string, string[]>;
}

describe('fifo: true', () => {
  let b: BuiltApp;
  let t: CfnTemplate;
  let standard: CfnTemplate;
  beforeAll(() => {
    b = build(FIFO);
    t = json(b);
    standard = json(build({ batchSize: 10, maxBatchingWindowSeconds: 0 }));
  });

  it('makes the ingest queue and its DLQ FIFO, deduplicating by the producer id only', () => {
    const queue = t.Resources[logicalId(b, b.stack.queue)]!.Properties!;
    const dlq = t.Resources[logicalId(b, b.stack.deadLetterQueue)]!.Properties!;
    expect(queue.FifoQueue).toBe(true);
    expect(queue.ContentBasedDeduplication).toBe(false);
    expect(dlq.FifoQueue).toBe(true);
    expect(queue.RedrivePolicy).toMatchObject({
      deadLetterTargetArn: getAtt(logicalId(b, b.stack.deadLetterQueue)),
    });
    expect(queue.SqsManagedSseEnabled).toBe(true);
  });

  it('consumes it with an event source valid for FIFO: <= 10 records, no batching window, partial responses', () => {
    const [[, mapping]] = ofType(t, 'AWS::Lambda::EventSourceMapping') as [[string, CfnResource]];
    expect(mapping.Properties!.BatchSize).toBe(10);
    expect(mapping.Properties!.MaximumBatchingWindowInSeconds).toBeUndefined();
    expect(mapping.Properties!.FunctionResponseTypes).toEqual(['ReportBatchItemFailures']);
  });

  it('keeps the same alarms and dashboard as a standard queue', () => {
    const names = (tpl: CfnTemplate) =>
      ofType(tpl, 'AWS::CloudWatch::Alarm')
        .map(([id]) => id)
        .sort();
    expect(names(t)).toEqual(names(standard));
    const body = (tpl: CfnTemplate) =>
      JSON.stringify(ofType(tpl, 'AWS::CloudWatch::Dashboard')[0]![1].Properties);
    expect(body(t)).toEqual(body(standard));
  });

  it('passes cdk-nag', () => {
    expect(new AwsSolutionsChecks().validateScope(b.app).violations.map((v) => v.ruleName)).toEqual([]);
  });

  it('does not let the function send to its FIFO queue (SqsDeferrals defers nothing from a FIFO source)', () => {
    const sends = identityStatements(t).filter((s) => asArray(s.Action).includes('sqs:SendMessage'));
    expect(sends.map((s) => s.Resource)).toEqual([getAtt(logicalId(b, b.stack.rejectedQueue))]);
    // The standard queue's twin does grant it: the difference is FIFO, not the test's reading of policies.
    const standardSends = identityStatements(standard).filter((s) =>
      asArray(s.Action).includes('sqs:SendMessage'),
    );
    expect(standardSends).toHaveLength(2);
  });

  it.each([
    [{ fifo: true, batchSize: 100, maxBatchingWindowSeconds: 0 }, 'environments.dev.batchSize'],
    [{ fifo: true, batchSize: 10, maxBatchingWindowSeconds: 2 }, 'environments.dev.maxBatchingWindowSeconds'],
  ])('refuses settings FIFO event sources do not have (%j)', (patch, key) => {
    expect(() => build(patch)).toThrow(EnvironmentConfigError);
    expect(() => build(patch)).toThrow(key);
  });
});

describe('producers', () => {
  let b: BuiltApp;
  let t: CfnTemplate;
  beforeAll(() => {
    b = build(PRODUCERS);
    t = json(b);
  });
  const queueOf = (name: string) => b.stack.producerQueues.find((p) => p.producer.name === name)!.queue;
  const policyOf = (name: string): Statement[] => {
    const id = logicalId(b, queueOf(name));
    const policies = ofType(t, 'AWS::SQS::QueuePolicy').filter(([, r]) =>
      JSON.stringify(r.Properties!.Queues).includes(`"${id}"`),
    );
    expect(policies).toHaveLength(1);
    return (policies[0]![1].Properties!.PolicyDocument as { Statement: Statement[] }).Statement;
  };

  it('creates one encrypted queue per producer, each redriving to the one DLQ, and no other ingest queue', () => {
    const dlqId = logicalId(b, b.stack.deadLetterQueue);
    const ingest = ofType(t, 'AWS::SQS::Queue').filter(([, r]) => r.Properties?.RedrivePolicy !== undefined);
    expect(ingest.map(([id]) => id).sort()).toEqual(
      ['billing', 'partner', 'open'].map((n) => logicalId(b, queueOf(n))).sort(),
    );
    for (const [, q] of ingest) {
      expect(q.Properties!.SqsManagedSseEnabled).toBe(true);
      expect(q.Properties!.RedrivePolicy).toMatchObject({ deadLetterTargetArn: getAtt(dlqId) });
    }
  });

  it('gives each queue its own event source on the one function', () => {
    const sources = ofType(t, 'AWS::Lambda::EventSourceMapping').map(([, r]) => r.Properties!);
    expect(sources.map((s) => s.EventSourceArn)).toEqual(
      expect.arrayContaining(['billing', 'partner', 'open'].map((n) => getAtt(logicalId(b, queueOf(n))))),
    );
    expect(sources).toHaveLength(3);
    for (const s of sources) expect(s.FunctionResponseTypes).toEqual(['ReportBatchItemFailures']);
  });

  it('binds each queue to its tenants in SOURCE_TENANTS, a value the function accepts at cold start', () => {
    expect(sourceTenants(t)).toEqual({
      [logicalId(b, queueOf('billing'))]: ['billing', 'billing-*'],
      [logicalId(b, queueOf('partner'))]: ['partner-eu'],
      [logicalId(b, queueOf('open'))]: ['open'],
    });
    const asArns = Object.fromEntries(
      Object.entries(sourceTenants(t)).map(([id, tenants]) => [
        `arn:aws:sqs:eu-west-1:123456789012:${id}`,
        tenants,
      ]),
    );
    expect(parseSourceTenants(JSON.stringify(asArns)).size).toBe(3);
  });

  it('lets only the named principals send: an Allow for them, a Deny for every other principal', () => {
    const billing = policyOf('billing');
    const allow = billing.find((s) => s.Sid === 'ProducerMaySend')!;
    expect(allow.Effect).toBe('Allow');
    expect(JSON.stringify(allow.Principal)).toContain(BILLING_ROLE);
    // The function's own role is not denied: it re-sends deferred records to the queue they came from.
    const functionRole = getAtt(logicalId(b, b.stack.fn.role!));
    const deny = billing.find((s) => s.Sid === 'OnlyTheProducerSends')!;
    expect(deny).toMatchObject({ Effect: 'Deny', Principal: { AWS: '*' }, Action: 'sqs:SendMessage' });
    expect(deny.Condition).toEqual({ ArnNotLike: { 'aws:PrincipalArn': [BILLING_ROLE, functionRole] } });
    const partner = policyOf('partner').find((s) => s.Sid === 'OnlyTheProducerSends')!;
    expect(partner.Condition).toEqual({
      StringNotEquals: { 'aws:PrincipalAccount': [PARTNER_ACCOUNT] },
      ArnNotLike: { 'aws:PrincipalArn': [BILLING_ROLE, functionRole] },
    });
    // ... and its identity policy allows it every producer queue (the Allow here is for producers only).
    expect(JSON.stringify(allow.Principal)).not.toContain(logicalId(b, b.stack.fn.role!));
    const defer = identityStatements(t).filter((s) => s.Sid === 'DeferRecords');
    expect(defer).toHaveLength(1);
    expect(defer[0]!.Action).toBe('sqs:SendMessage');
    const queueIds = (resources: unknown[]) =>
      resources.map((r) => (r as { 'Fn::GetAtt': [string] })['Fn::GetAtt'][0]).sort();
    expect(queueIds(asArray(defer[0]!.Resource))).toEqual(
      queueIds(['billing', 'partner', 'open'].map((n) => getAtt(logicalId(b, queueOf(n))))),
    );
    // TLS only, like every queue of the stack.
    expect(
      billing.some((s) => s.Effect === 'Deny' && JSON.stringify(s.Condition).includes('aws:SecureTransport')),
    ).toBe(true);
  });

  it('leaves senders to the account IAM when a producer names no principal', () => {
    expect(policyOf('open').map((s) => s.Sid)).not.toContain('OnlyTheProducerSends');
  });

  it('outputs one queue URL per producer', () => {
    const outputs = Object.keys(t.Outputs ?? {});
    expect(outputs.filter((o) => o.startsWith('QueueUrl')).sort()).toEqual([
      'QueueUrlbilling',
      'QueueUrlopen',
      'QueueUrlpartner',
    ]);
  });

  it('watches the oldest message of every producer queue', () => {
    const alarm = ofType(t, 'AWS::CloudWatch::Alarm').find(([id]) => id.includes('OldestMessageAge'))!;
    const metrics = JSON.stringify(alarm[1].Properties!.Metrics);
    for (const n of ['billing', 'partner', 'open']) expect(metrics).toContain(logicalId(b, queueOf(n)));
  });

  it('passes cdk-nag', () => {
    expect(new AwsSolutionsChecks().validateScope(b.app).violations.map((v) => v.ruleName)).toEqual([]);
  });

  it('keeps the single queue without producers (no SOURCE_TENANTS)', () => {
    const single = build({});
    const tpl = json(single);
    expect(ofType(tpl, 'AWS::Lambda::EventSourceMapping')).toHaveLength(1);
    const [[, fn]] = ofType(tpl, 'AWS::Lambda::Function') as [[string, CfnResource]];
    expect(
      (fn.Properties!.Environment as { Variables: Record<string, unknown> }).Variables.SOURCE_TENANTS,
    ).toBeUndefined();
    expect(single.stack.producerQueues).toEqual([]);
  });

  it('refuses producers whose event sources together may run more invocations than are reserved', () => {
    const patch = { ...PRODUCERS, reservedConcurrency: 5 };
    expect(() => build(patch)).toThrow(EnvironmentConfigError);
    expect(() => build(patch)).toThrow(
      'environments.dev.reservedConcurrency: must be >= maxConcurrency x event sources (2 x 3 = 6)',
    );
  });

  it.each([
    [[{ name: 'a', tenants: ['ACME'] }], 'environments.dev.producers.0.tenants'],
    [[{ name: 'a', tenants: ['*'] }], 'environments.dev.producers.0.tenants'],
    [[{ name: 'a', tenants: [] }], 'environments.dev.producers.0.tenants'],
    [
      [{ name: 'a', tenants: ['x'], principals: ['arn:aws:iam::1:role/x'] }],
      'environments.dev.producers.0.principals',
    ],
    [
      [
        { name: 'a', tenants: ['x'] },
        { name: 'a', tenants: ['y'] },
      ],
      'environments.dev.producers.1.name',
    ],
    [[{ name: 'Bad', tenants: ['x'] }], 'environments.dev.producers.0.name'],
    [[{ name: 'a', tenants: ['x'], extra: 1 }], 'environments.dev.producers.0'],
  ])('refuses %j naming the key', (producers, key) => {
    expect(() => build({ producers })).toThrow(key);
  });
});
