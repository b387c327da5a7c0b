import { buildApp } from './build-app.js';

// `cdk synth|deploy -c env=<dev|staging|prod>`; the CLI passes cdk.json context to the App for us.
buildApp().app.synth();
