import { App, type AppProps, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { loadEnvironmentConfig, type ResolvedEnvironment } from './config.js';
import { IngestStack } from './ingest-stack.js';

export interface BuildAppOptions extends AppProps {
  /** Environment to build; @default the `env` context value, else `dev` */
  readonly envName?: string;
  /** Lambda entry file; @default functions/ingest.ts */
  readonly entry?: string;
}

export interface BuiltApp {
  readonly app: App;
  readonly stack: IngestStack;
  readonly environment: ResolvedEnvironment;
}

/** Stack name (and construct id) of one environment's stack. */
export function stackName(envName: string): string {
  return `S3Ingest-${envName}`;
}

/**
 * The CDK app with one environment's stack and cdk-nag's AwsSolutions pack registered, so every synth
 * (CLI or test) fails on an unacknowledged finding.
 */
export function buildApp(options: BuildAppOptions = {}): BuiltApp {
  const { envName, entry, ...appProps } = options;
  const app = new App(appProps);
  const environment = loadEnvironmentConfig((key) => app.node.tryGetContext(key), envName);
  const { account, region } = environment.config;
  const stack = new IngestStack(app, stackName(environment.name), {
    stackName: stackName(environment.name),
    description: `s3-ingest (${environment.name}): SQS -> Lambda -> per-tenant S3 document stores`,
    environment,
    entry,
    // Environment-agnostic unless cdk.json pins account/region: synth needs no credentials.
    env: account !== undefined || region !== undefined ? { account, region } : undefined,
  });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { app, stack, environment };
}
