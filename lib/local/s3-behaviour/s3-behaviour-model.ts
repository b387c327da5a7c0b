import type { BehaviourModel } from '../../db/behaviour-model.js';
import { InvalidLocalOptionError } from '../errors.js';
import { type Clock, systemClock } from './clock.js';
import { seededRandom } from './seeded-random.js';

/** PUT/DELETE/POST are writes; GET/HEAD/LIST are reads (S3 limits them separately). */
export type S3RequestKind = 'read' | 'write';

/** What the modelled S3 does with one request. */
export type S3Outcome = 'ok' | 'slowdown' | 'internal-error' | 'reset' | 'stall';

export interface S3Decision {
  outcome: S3Outcome;
  /**
   * How long to wait before answering (or before resetting the connection). For `'stall'`, how long the
   * stall lasts (`faults.stallMs`).
   */
  latencyMs: number;
}

export interface S3BehaviourOptions {
  /** Accepted writes per second per prefix. Default 3500 (S3's documented limit). `Infinity` disables. */
  writesPerSecond?: number;
  /** Accepted reads per second per prefix. Default 5500 (S3's documented limit). `Infinity` disables. */
  readsPerSecond?: number;
  /**
   * Token-bucket capacity in seconds of rate: a prefix idle long enough may burst `rate x burstSeconds`
   * requests at once (never less than 1). Default 0.1 s (350 writes at the default rate): small, so a run of
   * a few seconds measures the sustained rate rather than the burst.
   */
  burstSeconds?: number;
  /**
   * Added latency per request, lognormal with this median and 99th percentile (ms). Default `false`: none.
   * S3 PUTs of small objects run around 20 ms median in-region.
   */
  latency?: { medianMs: number; p99Ms: number } | false;
  /**
   * Injected faults, each a probability per accepted (not throttled) request. Defaults 0.
   * `stallMs` is how long a stalled request hangs: default 600,000 (10 min, i.e. until the client gives up).
   * `slowDownRate` answers that share of ALL requests `503 SlowDown` whatever the token buckets say (S3 also
   * throttles while it repartitions, below the documented rates); such a request consumes no token.
   */
  faults?: {
    internalErrorRate?: number;
    resetRate?: number;
    stallRate?: number;
    stallMs?: number;
    slowDownRate?: number;
  };
  /** Seed of the pseudo-random generator behind latency and faults. Default 1: runs repeat exactly. */
  seed?: number;
  /**
   * The prefix a key is limited under. Default: the key up to and including its first `/`
   * (`t=acme/r=orders/id=1.json` -> `t=acme/`), the whole key if it has none.
   */
  prefixOf?: (key: string) => string;
  /** Time source of the token buckets. Default `systemClock`. */
  clock?: Clock;
}

export interface S3ModelCounters {
  /** Every decision made. */
  requests: number;
  ok: number;
  /** Answered 503 SlowDown. */
  throttled: number;
  internalErrors: number;
  resets: number;
  stalls: number;
  /**
   * The write requests among them (PUT, DELETE, POST): the per-prefix limit S3 publishes is on these, and
   * a prefix's reads (never throttled below their own, much higher, rate) must not count towards it.
   */
  writes: S3WriteCounters;
}

/** Write requests decided, accepted and answered 503 SlowDown. */
export interface S3WriteCounters {
  requests: number;
  ok: number;
  throttled: number;
}

/** Default prefix rule: up to and including the first `/`, else the whole key. */
export function firstSegmentPrefix(key: string): string {
  const slash = key.indexOf('/');
  return slash === -1 ? key : key.slice(0, slash + 1);
}

/** z such that P(N(0,1) <= z) = 0.99. */
const Z_99 = 2.3263478740408408;
const DEFAULT_STALL_MS = 600_000;

interface TokenBucket {
  tokens: number;
  updatedAt: number;
}

interface PrefixState {
  read: TokenBucket;
  write: TokenBucket;
  counters: S3ModelCounters;
}

function zeroCounters(): S3ModelCounters {
  return {
    requests: 0,
    ok: 0,
    throttled: 0,
    internalErrors: 0,
    resets: 0,
    stalls: 0,
    writes: { requests: 0, ok: 0, throttled: 0 },
  };
}

function copyCounters(counters: S3ModelCounters): S3ModelCounters {
  return { ...counters, writes: { ...counters.writes } };
}

function checkRate(option: string, value: number): number {
  if (!(value >= 0)) throw new InvalidLocalOptionError(option, `must be a number >= 0, got ${value}`);
  return value;
}

function checkProbability(option: string, value: number): number {
  if (!(value >= 0 && value <= 1))
    throw new InvalidLocalOptionError(option, `must be in [0, 1], got ${value}`);
  return value;
}

/**
 * One model of how S3 behaves under load: per-prefix token buckets for reads and writes (over-limit
 * requests get `slowdown`), a lognormal latency, and seeded faults. The chaos proxy applies it to real HTTP;
 * the `memory://` storage client applies it in-process. It counts what it decided, in total and per prefix.
 */
export class S3BehaviourModel implements BehaviourModel {
  readonly clock: Clock;
  #writesPerSecond: number;
  #readsPerSecond: number;
  readonly #burstSeconds: number;
  readonly #latency: { mu: number; sigma: number } | undefined;
  readonly #internalErrorRate: number;
  readonly #resetRate: number;
  readonly #stallRate: number;
  readonly #slowDownRate: number;
  readonly #stallMs: number;
  readonly #prefixOf: (key: string) => string;
  readonly #random: () => number;
  #prefixes = new Map<string, PrefixState>();
  #total = zeroCounters();

  constructor(options: S3BehaviourOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.#writesPerSecond = checkRate('writesPerSecond', options.writesPerSecond ?? 3500);
    this.#readsPerSecond = checkRate('readsPerSecond', options.readsPerSecond ?? 5500);
    this.#burstSeconds = options.burstSeconds ?? 0.1;
    if (!(this.#burstSeconds > 0 && Number.isFinite(this.#burstSeconds))) {
      throw new InvalidLocalOptionError(
        'burstSeconds',
        `must be a finite number > 0, got ${options.burstSeconds}`,
      );
    }
    const latency = options.latency ?? false;
    if (latency !== false) {
      const { medianMs, p99Ms } = latency;
      if (!(medianMs > 0))
        throw new InvalidLocalOptionError('latency.medianMs', `must be > 0, got ${medianMs}`);
      if (!(p99Ms >= medianMs && Number.isFinite(p99Ms))) {
        throw new InvalidLocalOptionError('latency.p99Ms', `must be finite and >= medianMs, got ${p99Ms}`);
      }
      this.#latency = { mu: Math.log(medianMs), sigma: (Math.log(p99Ms) - Math.log(medianMs)) / Z_99 };
    }
    const faults = options.faults ?? {};
    this.#internalErrorRate = checkProbability('faults.internalErrorRate', faults.internalErrorRate ?? 0);
    this.#resetRate = checkProbability('faults.resetRate', faults.resetRate ?? 0);
    this.#stallRate = checkProbability('faults.stallRate', faults.stallRate ?? 0);
    if (this.#internalErrorRate + this.#resetRate + this.#stallRate > 1) {
      throw new InvalidLocalOptionError(
        'faults',
        'internalErrorRate + resetRate + stallRate must not exceed 1',
      );
    }
    this.#slowDownRate = checkProbability('faults.slowDownRate', faults.slowDownRate ?? 0);
    this.#stallMs = faults.stallMs ?? DEFAULT_STALL_MS;
    if (!(this.#stallMs >= 0))
      throw new InvalidLocalOptionError('faults.stallMs', `must be >= 0, got ${faults.stallMs}`);
    const seed = options.seed ?? 1;
    if (!Number.isInteger(seed)) throw new InvalidLocalOptionError('seed', `must be an integer, got ${seed}`);
    this.#random = seededRandom(seed);
    this.#prefixOf = options.prefixOf ?? firstSegmentPrefix;
  }

  /** Current per-prefix limits. */
  get rates(): { writesPerSecond: number; readsPerSecond: number } {
    return { writesPerSecond: this.#writesPerSecond, readsPerSecond: this.#readsPerSecond };
  }

  /**
   * Decides the fate of one request on `key` (object key, or listed prefix for LIST). Constant time.
   * Throttling is checked first and a throttled request consumes no token; an accepted request consumes
   * one token, then may still fail with an injected fault (it reached "S3", so it counts against the rate).
   */
  decide(kind: S3RequestKind, key: string): S3Decision {
    const prefix = this.#prefixOf(key);
    let state = this.#prefixes.get(prefix);
    if (state === undefined) {
      const now = this.clock.now();
      state = {
        read: { tokens: this.#capacity(this.#readsPerSecond), updatedAt: now },
        write: { tokens: this.#capacity(this.#writesPerSecond), updatedAt: now },
        counters: zeroCounters(),
      };
      this.#prefixes.set(prefix, state);
    }
    const rate = kind === 'write' ? this.#writesPerSecond : this.#readsPerSecond;
    const bucket = kind === 'write' ? state.write : state.read;
    // Always draw the same amount of randomness per decision so a run repeats exactly whatever the outcomes.
    const dice = this.#random();
    const latencyMs = this.#sampleLatency();
    // Drawn only when configured, so runs without it repeat the same sequence as before the option existed.
    const injectedSlowDown = this.#slowDownRate > 0 && this.#random() < this.#slowDownRate;
    const outcome = injectedSlowDown ? 'slowdown' : this.#take(bucket, rate) ? this.#fault(dice) : 'slowdown';
    this.#count(state.counters, kind, outcome);
    this.#count(this.#total, kind, outcome);
    return { outcome, latencyMs: outcome === 'stall' ? this.#stallMs : latencyMs };
  }

  /** Changes the per-prefix limits from now on (tokens already earned are kept, up to the new capacity). */
  setRates(rates: { writesPerSecond?: number; readsPerSecond?: number }): void {
    const now = this.clock.now();
    // Settle every bucket at the old rate up to now, so the new rate applies only to time after the change.
    for (const state of this.#prefixes.values()) {
      this.#refill(state.write, this.#writesPerSecond, now);
      this.#refill(state.read, this.#readsPerSecond, now);
    }
    if (rates.writesPerSecond !== undefined) {
      this.#writesPerSecond = checkRate('writesPerSecond', rates.writesPerSecond);
    }
    if (rates.readsPerSecond !== undefined)
      this.#readsPerSecond = checkRate('readsPerSecond', rates.readsPerSecond);
    for (const state of this.#prefixes.values()) {
      state.write.tokens = Math.min(state.write.tokens, this.#capacity(this.#writesPerSecond));
      state.read.tokens = Math.min(state.read.tokens, this.#capacity(this.#readsPerSecond));
    }
  }

  /** Counters since construction or the last `resetStats()` (copies). */
  stats(): { total: S3ModelCounters; byPrefix: Record<string, S3ModelCounters> } {
    const byPrefix: Record<string, S3ModelCounters> = {};
    for (const [prefix, state] of this.#prefixes) {
      if (state.counters.requests > 0) byPrefix[prefix] = copyCounters(state.counters);
    }
    return { total: copyCounters(this.#total), byPrefix };
  }

  /** Zeroes the counters (token buckets keep their state). */
  resetStats(): void {
    this.#total = zeroCounters();
    for (const state of this.#prefixes.values()) state.counters = zeroCounters();
  }

  #capacity(rate: number): number {
    return Math.max(1, rate * this.#burstSeconds);
  }

  #refill(bucket: TokenBucket, rate: number, now: number): void {
    const elapsed = now - bucket.updatedAt;
    if (elapsed > 0) {
      bucket.tokens = Math.min(this.#capacity(rate), bucket.tokens + (elapsed * rate) / 1000);
      bucket.updatedAt = now;
    }
  }

  #take(bucket: TokenBucket, rate: number): boolean {
    if (rate === Number.POSITIVE_INFINITY) return true;
    if (rate === 0) return false;
    this.#refill(bucket, rate, this.clock.now());
    // The epsilon absorbs float drift from many small refills (ten 0.1 refills sum to 0.9999999999999999).
    if (bucket.tokens < 1 - 1e-9) return false;
    bucket.tokens -= 1;
    return true;
  }

  #fault(dice: number): S3Outcome {
    let threshold = this.#internalErrorRate;
    if (dice < threshold) return 'internal-error';
    threshold += this.#resetRate;
    if (dice < threshold) return 'reset';
    threshold += this.#stallRate;
    if (dice < threshold) return 'stall';
    return 'ok';
  }

  #sampleLatency(): number {
    if (this.#latency === undefined) return 0;
    // Box-Muller; 1 - u keeps the logarithm's argument in (0, 1].
    const u1 = 1 - this.#random();
    const u2 = this.#random();
    const z = Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
    return Math.exp(this.#latency.mu + this.#latency.sigma * z);
  }

  #count(counters: S3ModelCounters, kind: S3RequestKind, outcome: S3Outcome): void {
    counters.requests += 1;
    if (kind === 'write') {
      counters.writes.requests += 1;
      if (outcome === 'ok') counters.writes.ok += 1;
      else if (outcome === 'slowdown') counters.writes.throttled += 1;
    }
    switch (outcome) {
      case 'ok':
        counters.ok += 1;
        break;
      case 'slowdown':
        counters.throttled += 1;
        break;
      case 'internal-error':
        counters.internalErrors += 1;
        break;
      case 'reset':
        counters.resets += 1;
        break;
      case 'stall':
        counters.stalls += 1;
        break;
    }
  }
}
