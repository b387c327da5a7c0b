import { describe, expect, it } from 'vitest';
import { DashboardState, type WidgetView } from '../../../../lib/local/dashboard/dashboard-state.js';
import { MetricWindow, statisticOf } from '../../../../lib/local/dashboard/metric-window.js';
import type { InvocationResult } from '../../../../lib/local/lambda/event-source-runner.js';

const T0 = 1_700_000_000_000;

function emf(
  at: number,
  metrics: Record<string, number | number[]>,
  dimensions: Record<string, string> = {},
) {
  return JSON.stringify({
    _aws: {
      Timestamp: at,
      CloudWatchMetrics: [
        {
          Namespace: 'ns',
          Dimensions: [['service', ...Object.keys(dimensions)]],
          Metrics: Object.keys(metrics).map((Name) => ({ Name, Unit: 'Count' })),
        },
      ],
    },
    service: 'svc',
    ...dimensions,
    ...metrics,
  });
}

function invocation(outcome: InvocationResult['outcome'], durationMs: number): InvocationResult {
  return { requestId: 'r', messageIds: ['m'], outcome, failedMessageIds: [], deleted: 1, durationMs };
}

const series = (w: WidgetView | undefined, label: string) => w?.series.find((s) => s.label === label);

describe('statisticOf', () => {
  it('computes sums, maxima, averages and nearest-rank percentiles; nothing for no values', () => {
    const values = [5, 1, 4, 2, 3, 10, 9, 8, 7, 6];
    expect(statisticOf(values, 'Sum')).toBe(55);
    expect(statisticOf(values, 'Maximum')).toBe(10);
    expect(statisticOf(values, 'Average')).toBe(5.5);
    expect(statisticOf(values, 'p50')).toBe(5);
    expect(statisticOf(values, 'p95')).toBe(10);
    expect(statisticOf([1, 2, 3, 4], 'p99')).toBe(4);
    expect(statisticOf([], 'Sum')).toBeNull();
  });
});

describe('MetricWindow', () => {
  it('keeps values per period and forgets periods older than the window', () => {
    const w = new MetricWindow(1_000, 3);
    w.add('k', 1, T0);
    w.add('k', 2, T0 + 500);
    w.add('k', 5, T0 + 1_000);
    const p = w.periodOf(T0);
    expect(w.points('k', 'Sum', p, p + 2)).toEqual([3, 5, null]);
    w.add('k', 7, T0 + 3_000);
    expect(w.points('k', 'Sum', p, p + 3)).toEqual([null, 5, null, 7]);
  });
});

describe('DashboardState', () => {
  const queues = [
    { role: 'ingest' as const, label: '', url: 'q' },
    { role: 'dead-letter' as const, label: '', url: 'dlq' },
    { role: 'rejected' as const, label: '', url: 'dlq' },
  ];

  it('draws the CloudWatch widgets from EMF lines and invocations, per period, with window totals', () => {
    const state = new DashboardState({ queues, functionTimeoutMs: 8_000 });
    state.addEmfLine(emf(T0, { RecordsProcessed: 10, Writes: 12, ExecutionMs: [1, 2, 3, 40] }));
    state.addEmfLine(emf(T0 + 1_200, { RecordsProcessed: 5, Writes: 5, ExecutionMs: [7] }));
    state.addEmfLine(emf(T0 + 1_200, { RecordsRedelivered: 2 }, { cause: 'storage' }));
    state.addEmfLine('not an EMF line');
    state.addInvocation(invocation('success', 100), T0);
    state.addInvocation(invocation('failed', 300), T0 + 1_500);
    const snap = state.snapshot(T0 + 1_900, 10);
    const widget = (id: string) => snap.widgets.find((w) => w.id === id);
    expect(series(widget('records'), 'RecordsProcessed')).toMatchObject({ last: 5, total: 15 });
    expect(series(widget('records'), 'RecordsProcessed')?.points.slice(-2)).toEqual([10, 5]);
    expect(series(widget('pool-writes'), 'Writes')).toMatchObject({ total: 17 });
    expect(series(widget('execution'), 'ExecutionMs p95')?.points.slice(-2)).toEqual([40, 7]);
    expect(widget('redelivered-by-cause')?.series.map((s) => [s.label, s.total])).toEqual([['storage', 2]]);
    expect(series(widget('invocations'), 'Invocations')).toMatchObject({ total: 2 });
    expect(series(widget('invocations'), 'Errors')).toMatchObject({ total: 1, axis: 'right' });
    expect(series(widget('duration'), 'Maximum')?.points.slice(-2)).toEqual([100, 300]);
    expect(widget('duration')?.annotation).toEqual({ label: 'timeout', value: 8_000 });
    expect(snap).toMatchObject({ emfLines: 4, emfErrors: 1, periodMs: 1_000 });
    expect(snap.widgets.find((w) => w.id === 'records')?.series[0]?.points).toHaveLength(10);
  });

  it('draws queues from samples, marks what only CloudWatch measures, and turns prefix counters into rates', () => {
    const state = new DashboardState({ queues, functionTimeoutMs: 8_000 });
    const sample = (at: number, accepted: number, throttled: number, visible: number) =>
      state.addPipelineSample({
        at,
        queues: [
          { url: 'q', visible, inFlight: 3 },
          { url: 'dlq', visible: 1, inFlight: 0 },
        ],
        invocationsRunning: 2,
        s3WriteLimit: 200,
        prefixes: [
          {
            prefix: 't=acme/',
            scheduleRate: 180,
            bookedAheadMs: 250,
            acceptedWrites: accepted,
            throttledWrites: throttled,
          },
        ],
      });
    sample(T0, 150, 0, 40);
    sample(T0 + 1_000, 350, 4, 20);
    const snap = state.snapshot(T0 + 1_000, 10);
    const widget = (id: string) => snap.widgets.find((w) => w.id === id);
    expect(series(widget('queue-depth'), 'Visible')?.last).toBe(20);
    expect(series(widget('dead-letters'), 'Dead letters (failed after retries)')?.last).toBe(1);
    expect(series(widget('oldest-message-age'), 'Ingest queue')).toMatchObject({
      measured: false,
      last: null,
    });
    const rates = widget('local-prefix-rates');
    expect(series(rates, 't=acme/ accepted')?.points.slice(-2)).toEqual([150, 200]);
    expect(series(rates, 't=acme/ SlowDown')?.points.slice(-2)).toEqual([0, 4]);
    expect(series(rates, 't=acme/ fleet rate')?.last).toBe(180);
    expect(series(rates, 'S3 limit')?.last).toBe(200);
    expect(snap.s3WriteLimit).toBe(200);
    expect(series(widget('local-prefix-booked'), 't=acme/')?.last).toBe(250);
    expect(series(widget('local-pipeline'), 'Invocations running')).toMatchObject({ last: 2, axis: 'right' });
    expect(series(widget('local-pipeline'), 'Dead letters (DLQ depth)')?.last).toBe(1);
  });
});
