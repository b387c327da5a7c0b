import {
  DASHBOARD_WIDGETS,
  type DashboardMetric,
  type DashboardQueue,
  type DashboardStatistic,
  type DashboardWidget,
} from '../../ingest/dashboard-widgets.js';
import { INGEST_METRIC_CATALOGUE } from '../../ingest/metric-names.js';
import type { InvocationResult } from '../lambda/event-source-runner.js';
import { parseEmfLine } from './emf-line.js';
import { MetricWindow } from './metric-window.js';

/** A queue of the local stack and the role it plays in the deployed one. */
export interface DashboardQueueSource {
  readonly role: DashboardQueue;
  /** The line's prefix on the charts ('' for the single ingest queue), as the CloudWatch dashboard names it. */
  readonly label: string;
  readonly url: string;
}

/** What the pipeline sampler read at one instant. */
export interface PipelineSample {
  readonly at: number;
  /** Per queue URL: messages visible and in flight (received, not yet deleted). */
  readonly queues: readonly { readonly url: string; readonly visible: number; readonly inFlight: number }[];
  /** Invocations running (all event sources). */
  readonly invocationsRunning: number;
  /** The S3 model's write limit per prefix, writes/s (`Infinity`: none). */
  readonly s3WriteLimit: number;
  readonly prefixes: readonly PrefixSample[];
}

/** One tenant prefix (`t=acme/`): its fleet-wide schedule and what the S3 model did with its writes. */
export interface PrefixSample {
  readonly prefix: string;
  /** The rate its schedule (the semaphore table's item) paces the fleet at, writes/s; absent: no schedule. */
  readonly scheduleRate?: number;
  /** How far its schedule's first free slot is ahead of now, ms (0: free now). */
  readonly bookedAheadMs?: number;
  /** Write requests the S3 model accepted and throttled on the prefix since the start (counters). */
  readonly acceptedWrites: number;
  readonly throttledWrites: number;
}

/** One line as the page draws it. */
export interface SeriesView {
  readonly key: string;
  readonly label: string;
  readonly statistic: DashboardStatistic;
  readonly axis: 'left' | 'right';
  /** One value per period, oldest first; `null`: no datapoint. */
  readonly points: readonly (number | null)[];
  /** The newest datapoint. */
  readonly last: number | null;
  /** For `Sum` lines: the sum over the window. */
  readonly total: number | null;
  /** `false`: the local stack has no such measurement (the line stays empty). */
  readonly measured: boolean;
}

/** One graph as the page draws it. */
export interface WidgetView {
  readonly id: string;
  readonly title: string;
  readonly unit: DashboardWidget['unit'];
  /** `cloudwatch`: one of `DASHBOARD_WIDGETS`; `local`: what only the local stack can show. */
  readonly group: 'cloudwatch' | 'local';
  readonly series: readonly SeriesView[];
  readonly annotation?: { readonly label: string; readonly value: number };
  readonly note?: string;
}

/** Everything the page shows at one instant. */
export interface DashboardSnapshot {
  readonly now: number;
  readonly periodMs: number;
  /** Start of the first period, epoch ms. */
  readonly start: number;
  readonly widgets: readonly WidgetView[];
  /** The S3 model's write limit per prefix (`null`: unlimited). */
  readonly s3WriteLimit: number | null;
  /** EMF lines received, and those that could not be read. */
  readonly emfLines: number;
  readonly emfErrors: number;
}

/** What the local stack cannot measure: CloudWatch computes these from SQS's own bookkeeping. */
const NOT_MEASURED_LOCALLY = new Set(['ApproximateAgeOfOldestMessage', 'NumberOfMessagesSent']);

export interface DashboardStateOptions {
  /**
   * The stack's queues (also settable once they exist: `setQueues`).
   * @default []
   */
  readonly queues?: readonly DashboardQueueSource[];
  /** The function timeout the duration graph marks. */
  readonly functionTimeoutMs: number;
  /**
   * Length of one period of the graphs.
   * @default 1000
   */
  readonly periodMs?: number;
  /**
   * Periods kept.
   * @default 300
   */
  readonly periods?: number;
}

/**
 * The local dashboard's data: the handler's EMF lines and the runner's invocations, read into the metrics
 * the CloudWatch widgets plot (`DASHBOARD_WIDGETS`), and the pipeline sampler's readings (queues, the
 * prefixes' schedules and the S3 model) for the graphs only the local stack can draw.
 */
export class DashboardState {
  readonly #window: MetricWindow;
  #queues: readonly DashboardQueueSource[];
  readonly #functionTimeoutMs: number;
  /** Each prefix's counters at the previous sample, to turn them into per-period counts. */
  readonly #previous = new Map<string, { accepted: number; throttled: number }>();
  #s3WriteLimit = Number.POSITIVE_INFINITY;
  #emfLines = 0;
  #emfErrors = 0;

  constructor(options: DashboardStateOptions) {
    this.#window = new MetricWindow(options.periodMs ?? 1_000, options.periods ?? 300);
    this.#queues = options.queues ?? [];
    this.#functionTimeoutMs = options.functionTimeoutMs;
  }

  /** The stack's queues, once provisioned. */
  setQueues(queues: readonly DashboardQueueSource[]): void {
    this.#queues = queues;
  }

  /** One EMF line of the handler; a line that is not EMF is counted and otherwise ignored. */
  addEmfLine(line: string): void {
    this.#emfLines++;
    let record: ReturnType<typeof parseEmfLine>;
    try {
      record = parseEmfLine(line);
    } catch {
      this.#emfErrors++;
      return;
    }
    const { service: _, ...extra } = record.dimensions;
    const split = Object.entries(extra)
      .map(([name, value]) => `|${name}=${value}`)
      .join('');
    for (const metric of record.metrics)
      for (const value of metric.values)
        this.#window.add(`function:${metric.name}${split}`, value, record.timestamp);
  }

  /** One invocation as the event-source runner saw it: what Lambda's own metrics count. */
  addInvocation(result: InvocationResult, at: number): void {
    this.#window.add('lambda:Invocations', 1, at);
    this.#window.add('lambda:Errors', result.outcome === 'failed' ? 1 : 0, at);
    // The local event source never throttles the function.
    this.#window.add('lambda:Throttles', 0, at);
    this.#window.add('lambda:Duration', result.durationMs, at);
  }

  addPipelineSample(sample: PipelineSample): void {
    const { at } = sample;
    for (const q of sample.queues) {
      this.#window.add(`sqs:${q.url}:ApproximateNumberOfMessagesVisible`, q.visible, at);
      this.#window.add(`sqs:${q.url}:ApproximateNumberOfMessagesNotVisible`, q.inFlight, at);
    }
    const ingest = sample.queues.filter((q) =>
      this.#queues.some((s) => s.role === 'ingest' && s.url === q.url),
    );
    const dlq = sample.queues.filter((q) => this.#queues.some((s) => s.role !== 'ingest' && s.url === q.url));
    const total = (qs: typeof sample.queues, field: 'visible' | 'inFlight') =>
      qs.reduce((n, q) => n + q[field], 0);
    this.#window.add('local:visible', total(ingest, 'visible'), at);
    this.#window.add('local:inFlight', total(ingest, 'inFlight'), at);
    this.#window.add('local:dlq', total(dlq, 'visible'), at);
    this.#window.add('local:running', sample.invocationsRunning, at);
    this.#s3WriteLimit = sample.s3WriteLimit;
    if (Number.isFinite(sample.s3WriteLimit)) this.#window.add('local:limit', sample.s3WriteLimit, at);
    for (const p of sample.prefixes) {
      const before = this.#previous.get(p.prefix) ?? { accepted: 0, throttled: 0 };
      this.#previous.set(p.prefix, { accepted: p.acceptedWrites, throttled: p.throttledWrites });
      this.#window.add(`prefix:${p.prefix}|accepted`, p.acceptedWrites - before.accepted, at);
      this.#window.add(`prefix:${p.prefix}|throttled`, p.throttledWrites - before.throttled, at);
      if (p.scheduleRate !== undefined) this.#window.add(`prefix:${p.prefix}|rate`, p.scheduleRate, at);
      if (p.bookedAheadMs !== undefined) this.#window.add(`booked:${p.prefix}`, p.bookedAheadMs, at);
    }
  }

  /** The page's view of the last `seconds` (whole periods, the current one included). */
  snapshot(now: number, seconds = 120): DashboardSnapshot {
    const window = this.#window;
    const last = window.periodOf(now);
    const first = last - Math.max(1, Math.ceil((seconds * 1000) / window.periodMs)) + 1;
    const line = (
      key: string,
      label: string,
      statistic: DashboardStatistic,
      axis: 'left' | 'right' = 'left',
      measured = true,
    ): SeriesView => {
      const points = measured ? window.points(key, statistic, first, last) : [];
      const values = points.filter((p): p is number => p !== null);
      return {
        key,
        label,
        statistic,
        axis,
        points,
        last: values.at(-1) ?? null,
        total: statistic === 'Sum' && values.length > 0 ? values.reduce((a, b) => a + b, 0) : null,
        measured,
      };
    };
    const linesOf = (m: DashboardMetric): SeriesView[] => {
      const axis = m.axis ?? 'left';
      switch (m.source) {
        case 'function': {
          const label = m.label ?? m.name;
          if (!('dimension' in INGEST_METRIC_CATALOGUE[m.name]))
            return [line(`function:${m.name}`, label, m.statistic, axis)];
          // One line per value of the second dimension that occurred, as the CloudWatch SEARCH draws them.
          const keys = window.keys(`function:${m.name}|`);
          if (keys.length === 0) return [line(`function:${m.name}`, label, m.statistic, axis)];
          return keys.map((key) => line(key, key.slice(key.indexOf('=') + 1), m.statistic, axis));
        }
        case 'lambda':
          return [line(`lambda:${m.name}`, m.label ?? m.name, m.statistic, axis)];
        case 'sqs':
          return this.#queues
            .filter((q) => q.role === m.queue)
            .map((q) =>
              line(
                `sqs:${q.url}:${m.name}`,
                q.label === '' ? (m.label ?? m.name) : `${q.label}: ${m.label ?? m.name}`,
                m.statistic,
                axis,
                !NOT_MEASURED_LOCALLY.has(m.name),
              ),
            );
      }
    };
    const cloudwatch = DASHBOARD_WIDGETS.map(
      (w): WidgetView => ({
        id: w.id,
        title: w.title,
        unit: w.unit,
        group: 'cloudwatch',
        series: w.metrics.flatMap(linesOf),
        ...(w.annotation === 'function-timeout'
          ? { annotation: { label: 'timeout', value: this.#functionTimeoutMs } }
          : {}),
      }),
    );
    const prefixes = [
      ...new Set(window.keys('prefix:').map((k) => k.slice('prefix:'.length, k.lastIndexOf('|')))),
    ];
    const limited = Number.isFinite(this.#s3WriteLimit);
    const local: WidgetView[] = [
      {
        id: 'local-pipeline',
        title: 'Local: ingest messages visible and in flight, dead letters, invocations running',
        unit: 'Count',
        group: 'local',
        series: [
          line('local:visible', 'Visible', 'Maximum'),
          line('local:inFlight', 'In flight', 'Maximum'),
          line('local:dlq', 'Dead letters (DLQ depth)', 'Maximum'),
          line('local:running', 'Invocations running', 'Maximum', 'right'),
        ],
        note: 'Sampled every second. Locally one DLQ takes both dead letters and rejected messages.',
      },
      {
        id: 'local-prefix-rates',
        title: 'Local: per prefix, fleet rate vs accepted writes vs the S3 limit (writes/s)',
        unit: 'Count/Second',
        group: 'local',
        series: [
          ...(limited ? [line('local:limit', 'S3 limit', 'Maximum')] : []),
          ...prefixes.flatMap((p) => [
            line(`prefix:${p}|rate`, `${p} fleet rate`, 'Maximum'),
            line(`prefix:${p}|accepted`, `${p} accepted`, 'Sum'),
            line(`prefix:${p}|throttled`, `${p} SlowDown`, 'Sum'),
          ]),
        ],
        note: `Fleet rate: the prefix's schedule in the semaphore table (what BookedWriteRate sums per invocation). Accepted and SlowDown: write requests the S3 model answered, per period. S3 limit: ${limited ? `${this.#s3WriteLimit} writes/s per prefix` : 'none (start with --chaos to model one)'}.`,
      },
      {
        id: 'local-prefix-booked',
        title: 'Local: per prefix, slots booked ahead of now (ms)',
        unit: 'Milliseconds',
        group: 'local',
        series: prefixes.map((p) => line(`booked:${p}`, p, 'Maximum')),
        note: "How far each prefix's first free slot is ahead: the writes the fleet holds bookings for.",
      },
    ];
    return {
      now,
      periodMs: window.periodMs,
      start: first * window.periodMs,
      widgets: [...cloudwatch, ...local],
      s3WriteLimit: limited ? this.#s3WriteLimit : null,
      emfLines: this.#emfLines,
      emfErrors: this.#emfErrors,
    };
  }
}
