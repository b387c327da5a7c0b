// Entry `s3-ingest/local`: the embedded AWS stack and the S3 behaviour model. Kept apart from lib/index.ts so
// Lambda bundles never pull the emulators.

export {
  type ChaosProxy,
  type ChaosProxyOptions,
  classifyS3Request,
  startChaosProxy,
} from './chaos-proxy.js';
export { type Clock, ManualClock, systemClock } from './clock.js';
export { InvalidLocalOptionError } from './errors.js';
export {
  clientConfigFor,
  LOCAL_CREDENTIALS,
  LOCAL_REGION,
  type LocalAws,
  type LocalAwsClientConfig,
  type LocalAwsEndpoints,
  type LocalServiceClientConfig,
  type StartLocalAwsOptions,
  startLocalAws,
} from './local-aws.js';
export {
  type LocalResources,
  type ProvisionClientConfig,
  type ProvisionLocalOptions,
  provisionLocal,
} from './provision.js';
export {
  firstSegmentPrefix,
  S3BehaviourModel,
  type S3BehaviourOptions,
  type S3Decision,
  type S3ModelCounters,
  type S3Outcome,
  type S3RequestKind,
} from './s3-behaviour-model.js';
export { parseServeArgs, SERVE_USAGE, type ServeOptions } from './serve-args.js';
