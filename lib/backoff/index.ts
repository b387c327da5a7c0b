export type { Backoff, BackoffBounds, BackoffStrategy, RandomSource } from './backoff.js';
export { ConstantBackoff } from './constant.js';
export { DecorrelatedBackoff, type DecorrelatedBackoffOptions, decorrelatedDelay } from './decorrelated.js';
export { ExponentialBackoff, type ExponentialBackoffOptions, exponentialDelay } from './exponential.js';
