export type { AutotuneState, TunablePool } from './autotuner.js';
export { Autotuner, autotune } from './autotuner.js';
export { isCongestionSignal } from './congestion-signal.js';
export type { AutotuneOptions, GradientOptions, ThrottleOptions } from './options.js';
export { AUTOTUNE_DEFAULTS } from './options.js';
