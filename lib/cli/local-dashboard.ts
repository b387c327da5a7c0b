import { DashboardState } from '../local/dashboard/dashboard-state.js';
import { type LocalDashboard, startLocalDashboard } from '../local/dashboard/local-dashboard.js';
import type { InvocationResult } from '../local/lambda/event-source-runner.js';
import { LOCAL_FUNCTION_TIMEOUT_MS, type LocalPipeline } from '../local/lambda/local-pipeline.js';
import type { S3BehaviourOptions } from '../local/s3-behaviour/s3-behaviour-model.js';

/** The line `--dashboard` prints once the page is up: `dashboard: <url>`. */
export const DASHBOARD_READY = 'dashboard:';

/**
 * An S3 model that limits nothing: without `--chaos`, the dashboard still counts each prefix's writes as
 * S3 answers them (the model sits in front of the emulator and only counts).
 */
export const COUNTING_ONLY_S3: S3BehaviourOptions = {
  writesPerSecond: Number.POSITIVE_INFINITY,
  readsPerSecond: Number.POSITIVE_INFINITY,
};

/** `--dashboard`: what the pipeline feeds (EMF lines, invocations), and the page once the pipeline is up. */
export class DashboardWiring {
  readonly state = new DashboardState({ functionTimeoutMs: LOCAL_FUNCTION_TIMEOUT_MS });
  readonly metricLines = (line: string): void => this.state.addEmfLine(line);

  constructor(readonly port: number) {}

  recordInvocation(result: InvocationResult): void {
    this.state.addInvocation(result, Date.now());
  }

  start(pipeline: LocalPipeline): Promise<LocalDashboard> {
    return startLocalDashboard(pipeline, this.state, { port: this.port });
  }
}
