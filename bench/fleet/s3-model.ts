// S3, modelled with the project's own behaviour model (lib/local/s3-behaviour: per-prefix token buckets at
// S3's documented 3,500 PUT/COPY/POST/DELETE and 5,500 GET/HEAD requests/s per prefix, lognormal latency,
// seeded faults) behind the in-process `MemoryObjectStore` (S3's semantics, conditional writes enforced).
// Added here: a separate model per "hot" prefix so one prefix's limit can step mid-run (S3 repartitioning
// lowers or raises a prefix's rate without notice), per-second accepted writes of those prefixes, and
// request counts per API for the bill.
import type { BehaviourModel, StorageDecision, StorageRequestKind } from '../../lib/db/behaviour-model.js';
import type {
  ListObjectsInput,
  ListObjectsPage,
  ObjectHead,
  ObjectStore,
  PutObjectInput,
  StoreCallOptions,
  StoredObject,
} from '../../lib/db/object-store.js';
import {
  firstSegmentPrefix,
  S3BehaviourModel,
  type S3BehaviourOptions,
} from '../../lib/local/s3-behaviour/s3-behaviour-model.js';

/** Accepted writes per simulated second on one prefix. */
export class PerSecond {
  readonly counts: number[] = [];
  add(nowMs: number): void {
    const s = Math.floor(nowMs / 1000);
    while (this.counts.length <= s) this.counts.push(0);
    this.counts[s]! += 1;
  }
}

/** The highest mean over any `window` consecutive seconds (over all of them when there are fewer). */
export function peakMean(counts: readonly number[], window: number): number {
  if (counts.length < window) return counts.reduce((s, c) => s + c, 0) / Math.max(1, counts.length);
  let best = 0;
  let sum = 0;
  for (let i = 0; i < counts.length; i++) {
    sum += counts[i]!;
    if (i >= window) sum -= counts[i - window]!;
    if (i >= window - 1) best = Math.max(best, sum / window);
  }
  return best;
}

/** Routes each request to the model of its prefix: the hot prefixes' own, else the shared one. */
export class PrefixRoutedModel implements BehaviourModel {
  readonly clock: S3BehaviourModel['clock'];
  readonly shared: S3BehaviourModel;
  readonly hot = new Map<string, { model: S3BehaviourModel; accepted: PerSecond; throttled: PerSecond }>();
  readonly #origin: number;

  constructor(options: S3BehaviourOptions, hotPrefixes: readonly string[]) {
    this.shared = new S3BehaviourModel(options);
    this.clock = this.shared.clock;
    this.#origin = this.clock.now();
    hotPrefixes.forEach((prefix, i) => {
      this.hot.set(prefix, {
        model: new S3BehaviourModel({ ...options, seed: (options.seed ?? 1) + 1000 + i }),
        accepted: new PerSecond(),
        throttled: new PerSecond(),
      });
    });
  }

  decide(kind: StorageRequestKind, key: string): StorageDecision {
    const hot = this.hot.get(firstSegmentPrefix(key));
    if (hot === undefined) return this.shared.decide(kind, key);
    const decision = hot.model.decide(kind, key);
    // Accepted = a token was taken; the write lands when the answer comes back, close enough per second.
    if (kind === 'write' && decision.outcome === 'ok') hot.accepted.add(this.clock.now() - this.#origin);
    else if (decision.outcome === 'slowdown') hot.throttled.add(this.clock.now() - this.#origin);
    return decision;
  }

  /** Steps the write limit of one hot prefix (S3 repartitioning, or a test of the caps' reaction). */
  setHotWriteRate(prefix: string, writesPerSecond: number): void {
    this.hot.get(prefix)?.model.setRates({ writesPerSecond });
  }

  totals(): { requests: number; throttled: number; ok: number } {
    const all = [this.shared, ...[...this.hot.values()].map((h) => h.model)].map((m) => m.stats().total);
    return {
      requests: all.reduce((s, t) => s + t.requests, 0),
      throttled: all.reduce((s, t) => s + t.throttled, 0),
      ok: all.reduce((s, t) => s + t.ok, 0),
    };
  }
}

/** Requests per S3 API, every attempt counted (what the bill counts). */
export interface S3RequestCounts {
  put: number;
  get: number;
  head: number;
  delete: number;
  list: number;
}

/** Counts each call by API before passing it on. */
export class CountingStore implements ObjectStore {
  readonly counts: S3RequestCounts = { put: 0, get: 0, head: 0, delete: 0, list: 0 };
  constructor(private readonly inner: ObjectStore) {}
  get bucket(): string {
    return this.inner.bucket;
  }
  put(input: PutObjectInput, options?: StoreCallOptions): Promise<{ etag: string }> {
    this.counts.put += 1;
    return this.inner.put(input, options);
  }
  get(key: string, options?: StoreCallOptions): Promise<StoredObject | undefined> {
    this.counts.get += 1;
    return this.inner.get(key, options);
  }
  head(key: string, options?: StoreCallOptions): Promise<ObjectHead | undefined> {
    this.counts.head += 1;
    return this.inner.head(key, options);
  }
  delete(key: string, options?: StoreCallOptions): Promise<void> {
    this.counts.delete += 1;
    return this.inner.delete(key, options);
  }
  list(input: ListObjectsInput, options?: StoreCallOptions): Promise<ListObjectsPage> {
    this.counts.list += 1;
    return this.inner.list(input, options);
  }
}

/**
 * One container's S3 client CPU: every call first spends `cpuMsPerCall` of the container's single CPU
 * (signing, serialising, the SDK's middleware: ~1 ms per call measured here, design.md), one call after
 * the other, so a container's requests leave spaced out instead of all at the same simulated instant.
 * 0 passes calls straight through.
 */
export class ContainerCpuStore implements ObjectStore {
  #freeAt = 0;

  constructor(
    private readonly inner: ObjectStore,
    private readonly cpuMsPerCall: number,
    private readonly sleep: (ms: number) => Promise<void>,
    private readonly now: () => number = () => Date.now(),
  ) {}

  get bucket(): string {
    return this.inner.bucket;
  }

  async #cpu(): Promise<void> {
    if (this.cpuMsPerCall <= 0) return;
    const now = this.now();
    const start = Math.max(now, this.#freeAt);
    this.#freeAt = start + this.cpuMsPerCall;
    await this.sleep(this.#freeAt - now);
  }

  async put(input: PutObjectInput, options?: StoreCallOptions): Promise<{ etag: string }> {
    await this.#cpu();
    return this.inner.put(input, options);
  }
  async get(key: string, options?: StoreCallOptions): Promise<StoredObject | undefined> {
    await this.#cpu();
    return this.inner.get(key, options);
  }
  async head(key: string, options?: StoreCallOptions): Promise<ObjectHead | undefined> {
    await this.#cpu();
    return this.inner.head(key, options);
  }
  async delete(key: string, options?: StoreCallOptions): Promise<void> {
    await this.#cpu();
    return this.inner.delete(key, options);
  }
  async list(input: ListObjectsInput, options?: StoreCallOptions): Promise<ListObjectsPage> {
    await this.#cpu();
    return this.inner.list(input, options);
  }
}
