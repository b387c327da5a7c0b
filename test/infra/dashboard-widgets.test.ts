import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { type BuiltApp, buildApp } from '../../infra/build-app.js';
import { DASHBOARD_WIDGETS, type DashboardMetric } from '../../lib/ingest/dashboard-widgets.js';
import { INGEST_METRIC_CATALOGUE } from '../../lib/ingest/metric-names.js';
import { DashboardState } from '../../lib/local/dashboard/dashboard-state.js';
import { fileTempDirs } from '../support/temp-dir.js';
import { cdkJsonContext, withDeploySettings } from './cdk-context.js';

/** Where each app synthesizes (CDK's default is a new directory under the OS's temp directory per app). */
const appOutdir = fileTempDirs('cdk');

/** One plotted line, as both sides can state it: where it is read, which metric, which statistic, its label. */
interface Line {
  readonly from: string;
  readonly name: string;
  readonly statistic: string;
  readonly label: string | undefined;
  readonly axis: 'left' | 'right';
}

interface BodyWidget {
  type: string;
  properties: { title?: string; metrics?: unknown[][]; annotations?: { horizontal?: { label: string }[] } };
}

/** A literal part of the body as it is; a token as `@<logical id>` of the resource it references. */
function tokenText(part: unknown): string {
  if (typeof part === 'string') return part;
  const token = part as { Ref?: string; 'Fn::GetAtt'?: [string, string] };
  return `@${token.Ref ?? token['Fn::GetAtt']?.[0] ?? 'token'}`;
}

let built: BuiltApp;
let widgets: BodyWidget[];
beforeAll(() => {
  built = buildApp({
    outdir: appOutdir(),
    envName: 'dev',
    context: { ...withDeploySettings(cdkJsonContext()), 'aws:cdk:bundling-stacks': [] },
    builtinCloudFormationValidation: false,
    processEnv: {},
  });
  const json = Template.fromStack(built.stack).toJSON() as {
    Resources: Record<
      string,
      { Type: string; Properties: { DashboardBody: { 'Fn::Join': [string, unknown[]] } } }
    >;
  };
  const dashboard = Object.values(json.Resources).find((r) => r.Type === 'AWS::CloudWatch::Dashboard')!;
  // Tokens (queue names, region) become the logical id they reference, so each queue stays told apart.
  const text = dashboard.Properties.DashboardBody['Fn::Join'][1].map(tokenText).join('');
  widgets = (JSON.parse(text) as { widgets: BodyWidget[] }).widgets;
});

/** The queue behind a metric row's `QueueName` token. */
function queueRole(token: string): string {
  const ids = {
    ingest: built.stack.getLogicalId(built.stack.queue.node.defaultChild as never),
    'dead-letter': built.stack.getLogicalId(built.stack.deadLetterQueue.node.defaultChild as never),
    rejected: built.stack.getLogicalId(built.stack.rejectedQueue.node.defaultChild as never),
  };
  return Object.entries(ids).find(([, id]) => token === `@${id}`)?.[0] ?? `unknown ${token}`;
}

/** A metric row of the synthesized body, read back into a line. */
function lineOfRow(row: unknown[]): Line {
  const options = row.at(-1) as { expression?: string; stat?: string; label?: string; yAxis?: string };
  const axis = options.yAxis === 'right' ? 'right' : 'left';
  if (options.expression !== undefined) {
    const [, name, statistic] = /MetricName="(\w+)".*', '(\w+)'/.exec(options.expression)!;
    return { from: 'function', name: name!, statistic: statistic!, label: undefined, axis };
  }
  const [namespace, name, , dimensionValue] = row as string[];
  const from =
    namespace === 'AWS/SQS'
      ? `sqs:${queueRole(dimensionValue!)}`
      : namespace === 'AWS/Lambda'
        ? 'lambda'
        : 'function';
  // CDK leaves out `stat` when it is Average, CloudWatch's default.
  return { from, name: name!, statistic: options.stat ?? 'Average', label: options.label, axis };
}

/** A definition's line as the CloudWatch dashboard must draw it (the dev stack has one ingest queue). */
function lineOfDefinition(m: DashboardMetric): Line {
  const split = m.source === 'function' && 'dimension' in INGEST_METRIC_CATALOGUE[m.name];
  return {
    from: m.source === 'sqs' ? `sqs:${m.queue}` : m.source,
    name: m.name,
    statistic: m.statistic,
    label: split ? undefined : m.label,
    axis: m.axis ?? 'left',
  };
}

/** Left-axis lines first, as CloudWatch lists them. */
const byAxis = (lines: Line[]) => [
  ...lines.filter((l) => l.axis === 'left'),
  ...lines.filter((l) => l.axis === 'right'),
];

describe('the dashboard widget definitions (lib/ingest/dashboard-widgets.ts)', () => {
  it('are what the synthesized CloudWatch dashboard draws: the same graphs, lines, statistics and labels', () => {
    const graphs = widgets.filter((w) => w.type === 'metric' && w.properties.metrics !== undefined);
    expect(graphs.map((w) => w.properties.title)).toEqual(DASHBOARD_WIDGETS.map((w) => w.title));
    for (const [i, definition] of DASHBOARD_WIDGETS.entries()) {
      const drawn = (graphs[i]!.properties.metrics ?? []).map(lineOfRow);
      expect(drawn, definition.title).toEqual(byAxis(definition.metrics.map(lineOfDefinition)));
      const timeout = graphs[i]!.properties.annotations?.horizontal?.map((a) => a.label) ?? [];
      expect(timeout, definition.title).toEqual(
        definition.annotation === 'function-timeout' ? ['timeout'] : [],
      );
    }
  });

  it('are what the local page draws: the same graphs, each line with its statistic and label', () => {
    const state = new DashboardState({
      functionTimeoutMs: 8_000,
      queues: [
        { role: 'ingest', label: '', url: 'q' },
        { role: 'dead-letter', label: '', url: 'dlq' },
        { role: 'rejected', label: '', url: 'dlq' },
      ],
    });
    const page = state.snapshot(Date.now()).widgets.filter((w) => w.group === 'cloudwatch');
    expect(page.map((w) => [w.id, w.title, w.unit])).toEqual(
      DASHBOARD_WIDGETS.map((w) => [w.id, w.title, w.unit]),
    );
    for (const [i, definition] of DASHBOARD_WIDGETS.entries()) {
      const drawn = page[i]!.series.map((s) => ({ label: s.label, statistic: s.statistic, axis: s.axis }));
      expect(drawn, definition.title).toEqual(
        definition.metrics.map((m) => ({
          label: m.label ?? m.name,
          statistic: m.statistic,
          axis: m.axis ?? 'left',
        })),
      );
      expect(page[i]!.annotation?.label, definition.title).toBe(
        definition.annotation === 'function-timeout' ? 'timeout' : undefined,
      );
    }
  });

  it('name only metrics the function publishes (the catalogue) or that AWS publishes', () => {
    for (const m of DASHBOARD_WIDGETS.flatMap((w) => w.metrics))
      if (m.source === 'function') expect(Object.keys(INGEST_METRIC_CATALOGUE)).toContain(m.name);
    expect(new Set(DASHBOARD_WIDGETS.map((w) => w.id)).size).toBe(DASHBOARD_WIDGETS.length);
  });
});
