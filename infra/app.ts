import { buildApp } from './build-app.js';
import { EnvironmentConfigError } from './config.js';

// `cdk synth|deploy -c env=<dev|staging|prod>`; the CLI passes cdk.json context to the App for us.
// A configuration error is the user's to fix: one line naming the keys, no stack trace.
try {
  buildApp().app.synth();
} catch (error) {
  if (!(error instanceof EnvironmentConfigError)) throw error;
  process.stderr.write(`${error.name}: ${error.message}\n`);
  process.exitCode = 1;
}
