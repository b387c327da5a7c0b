// Entry `s3-ingest/local`: the embedded AWS stack and the S3 behaviour model. Kept apart from lib/index.ts so
// Lambda bundles never pull the emulators.

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
} from './emulators/local-aws.js';
export {
  type LocalResources,
  type ProvisionClientConfig,
  type ProvisionLocalOptions,
  provisionLocal,
} from './emulators/provision.js';
export { parseServeArgs, SERVE_USAGE, type ServeOptions } from './emulators/serve-args.js';
export { InvalidLocalOptionError, LocalStackError } from './errors.js';
export { type AwsCall, type AwsService, identifyAwsCall } from './faults/aws-call.js';
export { type ErrorAnswerKind, errorAnswer, type WireAnswer } from './faults/fault-answers.js';
export {
  FAULT_KINDS,
  type FaultKind,
  type FaultProxy,
  type FaultProxyOptions,
  type FaultRule,
  type ProxiedCall,
  startFaultProxy,
} from './faults/fault-proxy.js';
export {
  type ChaosProxy,
  type ChaosProxyOptions,
  classifyS3Request,
  startChaosProxy,
} from './s3-behaviour/chaos-proxy.js';
export { type Clock, ManualClock, systemClock } from './s3-behaviour/clock.js';
export {
  firstSegmentPrefix,
  S3BehaviourModel,
  type S3BehaviourOptions,
  type S3Decision,
  type S3ModelCounters,
  type S3Outcome,
  type S3RequestKind,
} from './s3-behaviour/s3-behaviour-model.js';
