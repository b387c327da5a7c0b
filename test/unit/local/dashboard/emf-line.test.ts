// The local dashboard reads the handler's own EMF lines: the lines InvocationMetrics publishes through
// Powertools, captured by EmfLineMetrics, parse back into the counts, samples and splits the handler had.
import { describe, expect, it } from 'vitest';
import { InvocationMetrics } from '../../../../lib/ingest/handler/settle/invocation-metrics.js';
import { InvalidEmfLineError, parseEmfLine } from '../../../../lib/local/dashboard/emf-line.js';
import { EmfLineMetrics } from '../../../../lib/local/lambda/emf-line-metrics.js';

/** One invocation's EMF lines as the handler publishes them. */
function publishedLines(): string[] {
  const lines: string[] = [];
  const metrics = new EmfLineMetrics({ namespace: 'ns', serviceName: 'svc' }, (line) => lines.push(line));
  const invocation = new InvocationMetrics();
  invocation.countWrite();
  invocation.countWrite();
  invocation.permitWait(12);
  invocation.settle(
    {
      written: 3,
      deadLettered: 1,
      deferred: 0,
      redelivered: 2,
      redeliveredByCause: new Map([['storage', 2]]),
      deadLetteredByReason: new Map([['record-exists', 1]]),
    },
    false,
  );
  invocation.addTo(metrics, ['acme']);
  metrics.publishStoredMetrics();
  return lines;
}

describe('parseEmfLine on the handler EMF lines (EmfLineMetrics)', () => {
  it('reads the counts, the samples (value arrays) and each split line with its second dimension', () => {
    const records = publishedLines().map(parseEmfLine);
    const main = records.find((r) => r.metrics.some((m) => m.name === 'Writes'))!;
    expect(main.namespace).toBe('ns');
    expect(main.dimensions).toEqual({ service: 'svc' });
    const value = (name: string) => main.metrics.find((m) => m.name === name)?.values;
    expect(value('Writes')).toEqual([2]);
    expect(value('RecordsProcessed')).toEqual([3]);
    expect(value('RecordsFailed')).toEqual([2]);
    expect(value('BookingWaitMs')).toEqual([12]);
    expect(main.metrics.find((m) => m.name === 'Writes')?.unit).toBe('Count');
    const splits = records.filter((r) => r !== main).map((r) => [r.dimensions, r.metrics]);
    expect(splits).toEqual(
      expect.arrayContaining([
        [{ service: 'svc', cause: 'storage' }, [{ name: 'RecordsRedelivered', unit: 'Count', values: [2] }]],
        [
          { service: 'svc', reason: 'record-exists' },
          [{ name: 'RecordsRejected', unit: 'Count', values: [1] }],
        ],
      ]),
    );
    expect(splits).toHaveLength(2);
  });

  it('publishes nothing for an empty invocation line (no metrics stored)', () => {
    const lines: string[] = [];
    new EmfLineMetrics({ namespace: 'ns', serviceName: 'svc' }, (line) =>
      lines.push(line),
    ).publishStoredMetrics();
    expect(lines).toEqual([]);
  });

  it.each([
    ['a log line', 'invocation 1: 10 records'],
    ['JSON without the directive', '{"level":"INFO"}'],
    ['no namespace', '{"_aws":{"CloudWatchMetrics":[{"Dimensions":[],"Metrics":[]}]}}'],
    [
      'a metric without a value',
      '{"_aws":{"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[],"Metrics":[{"Name":"Writes"}]}]}}',
    ],
    [
      'a dimension without a value',
      '{"_aws":{"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[["service"]],"Metrics":[]}]}}',
    ],
    [
      'a non-numeric sample',
      '{"_aws":{"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[],"Metrics":[{"Name":"X"}]}]},"X":[1,"2"]}',
    ],
  ])('refuses %s with InvalidEmfLineError', (_, line) => {
    expect(() => parseEmfLine(line)).toThrow(InvalidEmfLineError);
  });
});
