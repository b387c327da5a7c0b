/** Latency-gradient tuning (Gradient2-like). Defaults suit short requests (tens of milliseconds) of small payloads. */
export interface GradientOptions {
  /**
   * Short-term latency may exceed the long-term one by this factor before the limit shrinks.
   * @default 1.5
   * @example { gradient: { tolerance: 2 } }
   */
  tolerance?: number;
  /**
   * Samples the long-term latency average spans (EWMA window).
   * @default 600
   * @example { gradient: { longWindow: 1_000 } }
   */
  longWindow?: number;
  /**
   * Samples the short-term latency average spans (EWMA window).
   * @default 10
   * @example { gradient: { shortWindow: 20 } }
   */
  shortWindow?: number;
  /**
   * Weight of each new limit estimate (0..1]; lower is smoother and slower.
   * @default 0.2
   * @example { gradient: { smoothing: 0.1 } }
   */
  smoothing?: number;
}

/** Throttle-driven rate limit (CUBIC on a request rate, like the AWS SDK's adaptive retry mode). */
export interface ThrottleOptions {
  /**
   * Once per round trip a throttle or timeout sets the rate to this share of what was being sent; the other
   * refusals of that round trip then take half an in-flight slot each, never below half of what was sent.
   * (Without a prior, the first throttle, which ends slow start, halves instead.)
   * @default 0.9
   * @example { throttle: { beta: 0.7 } }
   */
  beta?: number;
  /**
   * Pace of the probe past the plateau the last cut landed on: the rate is +30% after this many busy
   * seconds (+3.75% after half of it: gentle near the last known good rate).
   * @default 2
   * @example { throttle: { recoverySeconds: 5 } }
   */
  recoverySeconds?: number;
  /**
   * Requests per second to start from, as a plateau: slow start stops there (rate x latency by Little's law)
   * and the tuner probes beyond it gently, CUBIC's convex way, until the service throttles. Give the
   * service's documented limit when there is one: it may grant more (the probe finds it) or less (the first
   * throttle cuts). `Infinity`: no prior, slow start until the first throttle, which halves what was sent.
   * lib/db's `openDatabase` fills in its store's documented write rate.
   * @default Infinity (no prior)
   * @example { throttle: { initialRate: 500 } } // a service documented to accept 500 requests/s
   */
  initialRate?: number;
}

/** Adaptive concurrency options: `autotune(options)` for `ExecutorPoolOptions.autotune`, or `new Autotuner(pool, options)`. */
export interface AutotuneOptions {
  /**
   * `false` leaves the pool's concurrency alone (the tuner attaches but never changes it).
   * @default true
   * @example new Autotuner(pool, { enabled: false }) // watch what it would set, set nothing
   */
  enabled?: boolean;
  /**
   * The limit never goes below this. Integer >= 1.
   * @default 1
   * @example { minConcurrency: 4 }
   */
  minConcurrency?: number;
  /**
   * The limit never goes above this. Integer >= `minConcurrency`.
   * @default 1000
   * @example { maxConcurrency: 200 }
   */
  maxConcurrency?: number;
  /**
   * Limit to start from.
   * @default the pool's concurrency when attached (10 with `concurrency: 'auto'`), within the bounds
   * @example new ExecutorPool({ concurrency: 'auto', autotune: autotune({ initialConcurrency: 32 }) })
   */
  initialConcurrency?: number;
  /**
   * Milliseconds a first attempt may take before the limit shrinks even if the long-term latency is as high
   * (an absolute ceiling next to the relative gradient).
   * @default Infinity (relative only)
   * @example { targetLatency: 250 }
   */
  targetLatency?: number;
  /**
   * Share (percent, 0-100] of the memory budget in-flight operations may use.
   * @default 80
   * @example { targetMemoryPercent: 60 }
   */
  targetMemoryPercent?: number;
  /**
   * Memory budget in bytes.
   * @default `AWS_LAMBDA_FUNCTION_MEMORY_SIZE` MiB in Lambda, else the process's constrained memory (cgroup), else the machine's total memory
   * @example { memoryBudgetBytes: 512 * 1024 * 1024 }
   */
  memoryBudgetBytes?: number;
  /**
   * Bytes the process uses now. Injected by tests.
   * @default () => process.memoryUsage.rss()
   * @example { memoryUsage: () => fakeRss }
   */
  memoryUsage?: () => number;
  /**
   * Latency-gradient tuning; see `GradientOptions`.
   * @default { tolerance: 1.5, longWindow: 600, shortWindow: 10, smoothing: 0.2 }
   * @example { gradient: { tolerance: 2 } }
   */
  gradient?: GradientOptions;
  /**
   * Throttle-driven rate limit; see `ThrottleOptions`.
   * @default { beta: 0.9, recoverySeconds: 2, initialRate: Infinity }
   * @example { throttle: { initialRate: 500 } }
   */
  throttle?: ThrottleOptions;
  /**
   * Whether a failed attempt's error says the service is overloaded: a throttled answer, or a timeout (latency
   * gone to infinity). Those cut the request rate and end slow start; other failures are ignored. The service
   * a pool calls knows its own refusals: pass its classifier.
   * @default isCongestionSignal (the throttling and timeout names of the one taxonomy, lib/errors/classify.ts)
   * @example { isThrottle: (error) => (error as { status?: number }).status === 429 }
   */
  isThrottle?: (error: unknown) => boolean;
  /**
   * Milliseconds now, on the pool's clock. Injected by tests.
   * @default () => performance.now()
   * @example { now: () => fakeClock.now }
   */
  now?: () => number;
}

export const AUTOTUNE_DEFAULTS = {
  minConcurrency: 1,
  maxConcurrency: 1000,
  targetLatency: Number.POSITIVE_INFINITY,
  targetMemoryPercent: 80,
  gradient: { tolerance: 1.5, longWindow: 600, shortWindow: 10, smoothing: 0.2 },
  throttle: { beta: 0.9, recoverySeconds: 2, initialRate: Number.POSITIVE_INFINITY },
} as const;

/** The memory budget outside an explicit option: Lambda's configured size, a cgroup limit, or total RAM. */
export function defaultMemoryBudget(env: Record<string, string | undefined>, totalMemory: number): number {
  const lambdaMb = Number(env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE);
  if (Number.isFinite(lambdaMb) && lambdaMb > 0) return lambdaMb * 1024 * 1024;
  const constrained = process.constrainedMemory?.() ?? 0;
  // Without a cgroup limit Node reports 0 or a huge sentinel; neither is a budget.
  if (constrained > 0 && constrained < totalMemory) return constrained;
  return totalMemory;
}

function check(name: string, value: number, ok: boolean): number {
  if (!ok) throw new RangeError(`autotune.${name} is out of range, got ${value}`);
  return value;
}

export interface ResolvedAutotuneOptions {
  readonly enabled: boolean;
  readonly minConcurrency: number;
  readonly maxConcurrency: number;
  readonly targetLatency: number;
  readonly targetMemoryPercent: number;
  readonly gradient: Required<GradientOptions>;
  readonly throttle: Required<ThrottleOptions>;
}

/** Fills defaults and rejects nonsense with a RangeError naming the field. */
export function resolveAutotuneOptions(options: AutotuneOptions): ResolvedAutotuneOptions {
  const min = options.minConcurrency ?? AUTOTUNE_DEFAULTS.minConcurrency;
  const max = options.maxConcurrency ?? Math.max(min, AUTOTUNE_DEFAULTS.maxConcurrency);
  check('minConcurrency', min, Number.isInteger(min) && min >= 1);
  check('maxConcurrency', max, Number.isInteger(max) && max >= min);
  const g = { ...AUTOTUNE_DEFAULTS.gradient, ...options.gradient };
  const t = { ...AUTOTUNE_DEFAULTS.throttle, ...options.throttle };
  const targetLatency = options.targetLatency ?? AUTOTUNE_DEFAULTS.targetLatency;
  const targetMemoryPercent = options.targetMemoryPercent ?? AUTOTUNE_DEFAULTS.targetMemoryPercent;
  check('targetLatency', targetLatency, targetLatency > 0);
  check('targetMemoryPercent', targetMemoryPercent, targetMemoryPercent > 0 && targetMemoryPercent <= 100);
  check('gradient.tolerance', g.tolerance, g.tolerance >= 1);
  check('gradient.longWindow', g.longWindow, g.longWindow >= 1);
  check('gradient.shortWindow', g.shortWindow, g.shortWindow >= 1 && g.shortWindow <= g.longWindow);
  check('gradient.smoothing', g.smoothing, g.smoothing > 0 && g.smoothing <= 1);
  check('throttle.beta', t.beta, t.beta > 0 && t.beta < 1);
  check('throttle.recoverySeconds', t.recoverySeconds, t.recoverySeconds > 0);
  check('throttle.initialRate', t.initialRate, t.initialRate > 0);
  if (options.isThrottle !== undefined && typeof options.isThrottle !== 'function') {
    throw new TypeError(`autotune.isThrottle must be a function, got ${typeof options.isThrottle}`);
  }
  return {
    enabled: options.enabled ?? true,
    minConcurrency: min,
    maxConcurrency: max,
    targetLatency,
    targetMemoryPercent,
    gradient: g,
    throttle: t,
  };
}
