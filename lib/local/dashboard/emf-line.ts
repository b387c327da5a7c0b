import { S3IngestError } from '../../errors/index.js';

/** A line given as EMF is not an Embedded Metric Format object (`reason` says what is wrong). */
export class InvalidEmfLineError extends S3IngestError {
  override readonly name = 'InvalidEmfLineError';
}

/** One metric of an EMF line: its values (one, or the samples of an EMF value array). */
export interface EmfMetric {
  readonly name: string;
  readonly unit: string | undefined;
  readonly values: readonly number[];
}

/** What an EMF line says: when, in which namespace, under which dimension values, which metrics. */
export interface EmfRecord {
  readonly timestamp: number;
  readonly namespace: string;
  /** Dimension name -> value, for every dimension the line declares (e.g. `service`, `cause`). */
  readonly dimensions: Readonly<Record<string, string>>;
  readonly metrics: readonly EmfMetric[];
}

interface EmfDirective {
  Namespace?: unknown;
  Dimensions?: unknown;
  Metrics?: unknown;
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Reads one EMF line (CloudWatch's Embedded Metric Format, as Powertools prints it): the `_aws` directive
 * names the metrics and dimensions, whose values are top-level members. Throws `InvalidEmfLineError` on
 * anything else (a log line, a metric without a numeric value).
 */
export function parseEmfLine(line: string): EmfRecord {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    throw new InvalidEmfLineError('not JSON');
  }
  if (!isRecord(parsed) || !isRecord(parsed._aws)) throw new InvalidEmfLineError('no _aws directive');
  const { Timestamp, CloudWatchMetrics } = parsed._aws;
  if (!Array.isArray(CloudWatchMetrics) || CloudWatchMetrics.length !== 1)
    throw new InvalidEmfLineError('expected exactly one CloudWatchMetrics directive');
  const directive = CloudWatchMetrics[0] as EmfDirective;
  if (typeof directive.Namespace !== 'string') throw new InvalidEmfLineError('no Namespace');
  const dimensionNames = Array.isArray(directive.Dimensions) ? directive.Dimensions.flat() : [];
  const dimensions: Record<string, string> = {};
  for (const name of dimensionNames) {
    const value = parsed[String(name)];
    if (typeof value !== 'string') throw new InvalidEmfLineError(`dimension ${String(name)} has no value`);
    dimensions[String(name)] = value;
  }
  if (!Array.isArray(directive.Metrics)) throw new InvalidEmfLineError('no Metrics');
  const metrics = directive.Metrics.map((definition): EmfMetric => {
    if (!isRecord(definition) || typeof definition.Name !== 'string')
      throw new InvalidEmfLineError('a metric without a Name');
    const raw = parsed[definition.Name];
    const values = Array.isArray(raw) ? raw : [raw];
    if (!values.every((v): v is number => typeof v === 'number' && Number.isFinite(v)))
      throw new InvalidEmfLineError(`metric ${definition.Name} has no numeric value`);
    return {
      name: definition.Name,
      unit: typeof definition.Unit === 'string' ? definition.Unit : undefined,
      values,
    };
  });
  return {
    timestamp: typeof Timestamp === 'number' ? Timestamp : Date.now(),
    namespace: directive.Namespace,
    dimensions,
    metrics,
  };
}
