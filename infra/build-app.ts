import { readFileSync } from 'node:fs';
import { App, type AppProps, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { loadEnvironmentConfig, type ResolvedEnvironment } from './config.js';
import { IngestStack } from './ingest-stack.js';

export interface BuildAppOptions extends AppProps {
  /** Environment to build; @default the `env` context value, else `dev` */
  readonly envName?: string;
  /** Lambda entry file; @default functions/ingest.ts */
  readonly entry?: string;
  /**
   * Environment variables giving deployment settings (`S3_INGEST_ALARM_EMAIL`, ...; infra/deploy-settings.ts).
   * @default process.env
   */
  readonly processEnv?: Readonly<Record<string, string | undefined>>;
  /** package.json's `repository`, the runbook base URL when none is set; @default read from package.json */
  readonly repository?: unknown;
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

/** The `repository` field of this package's package.json, if it has one. */
export function packageRepository(): unknown {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    repository?: unknown;
  };
  return pkg.repository;
}

/**
 * The CDK app with one environment's stack and cdk-nag's AwsSolutions pack registered, so every synth
 * (CLI or test) fails on an unacknowledged finding.
 */
export function buildApp(options: BuildAppOptions = {}): BuiltApp {
  const { envName, entry, processEnv, repository, ...appProps } = options;
  const app = new App(appProps);
  const environment = loadEnvironmentConfig((key) => app.node.tryGetContext(key), envName, {
    env: processEnv ?? process.env,
    repository: 'repository' in options ? repository : packageRepository(),
  });
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
