import { Metrics } from '@aws-lambda-powertools/metrics';

type MetricsOptions = NonNullable<ConstructorParameters<typeof Metrics>[0]>;

/**
 * Powertools `Metrics` that hand every EMF line they publish to `onLine` (the JSON text CloudWatch would
 * ingest), and print it too when `print` is set. Single-metric lines (the handler's per-cause and per-reason
 * lines) go the same way. The local dashboard draws the CloudWatch widgets from these lines.
 */
export class EmfLineMetrics extends Metrics {
  readonly #options: MetricsOptions;
  readonly #onLine: (line: string) => void;
  readonly #print: boolean;

  constructor(options: MetricsOptions, onLine: (line: string) => void, print = false) {
    super(options);
    this.#options = options;
    this.#onLine = onLine;
    this.#print = print;
  }

  override publishStoredMetrics(): this {
    if (this.hasStoredMetrics()) this.#onLine(JSON.stringify(this.serializeMetrics()));
    if (this.#print) return super.publishStoredMetrics();
    this.clearMetrics();
    this.clearDimensions();
    this.clearMetadata();
    return this;
  }

  override singleMetric(): Metrics {
    return new EmfLineMetrics({ ...this.#options, singleMetric: true }, this.#onLine, this.#print);
  }
}
