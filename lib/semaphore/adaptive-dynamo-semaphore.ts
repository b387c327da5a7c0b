import { withAbortReason } from './abort-reason.js';
import { acquireInRounds } from './acquire-rounds.js';
import {
  type AdaptiveLimitOptions,
  type AdaptiveState,
  adaptLimit,
  CAPACITY_QUANTUM,
  initialState,
  MIN_CAPACITY,
  quantize,
  type ResolvedAdaptiveLimitOptions,
  rescaleForLatency,
  resolveAdaptiveLimitOptions,
} from './adaptive-limit.js';
import { AdaptiveShardTable, type CapacityChange } from './adaptive-shard-table.js';
import { acquireBackoffCap } from './backoff.js';
import type { DynamoSemaphoreOptions } from './dynamo-semaphore.js';
import { LeaseLostError } from './errors.js';
import { newLeaseId } from './lease-id.js';
import { expiredHolders, type HolderEntry } from './shard-table.js';
import type { AcquireOptions, Lease, LeaseCallOptions, LeaseUsage, Semaphore } from './types.js';
import {
  checkLeaseMs,
  checkPermitRequest,
  checkSemaphoreOptions,
  resolveDynamoTuning,
} from './validation.js';

/**
 * A DynamoDB semaphore whose limit adapts, fleet-wide, to what S3 accepts (README, "Adaptive limits").
 * @example
 * new AdaptiveDynamoSemaphore({ client, tableName, name: 'prefix:t=acme', limit: 3500,
 *   adaptive: { ratePerSecond: 3500 } }) // starts at 3500/s x 20 ms = 70 permits, then follows S3
 */
export interface AdaptiveDynamoSemaphoreOptions extends Omit<DynamoSemaphoreOptions, 'limit' | 'shards'> {
  /**
   * Hard cap: the most permits one acquire may ask for and the most the adaptive limit may ever reach.
   * The limit itself starts at Little's law with `adaptive.initialLatencyMs` and moves below this cap.
   */
  limit: number;
  /** How the limit moves: the configured rate, AIMD factors, latency averaging (`AdaptiveLimitOptions`). */
  adaptive: AdaptiveLimitOptions;
  /**
   * Shard items (`sk = adaptive#<i>`), for a semaphore whose items do not exist yet (an existing one keeps
   * its stored count).
   * @default ceil(initial limit / 64): 3500/s x 20 ms = 70 permits -> 2 shards
   */
  shards?: number;
}

/** Rounds down to the capacity grid: grants never exceed what is free, even by rounding noise. */
function floorToQuantum(permits: number): number {
  return Math.floor(permits / CAPACITY_QUANTUM + 1e-9) * CAPACITY_QUANTUM;
}

interface Grant {
  shard: number;
  n: number;
  /** The shard's adaptive state as read just before the take (or left by a resize): the release's step starts from it. */
  seen: AdaptiveState;
  /**
   * The count a resize sent (kept whatever its answer said): given back if `n` is not in the entry, as after
   * a resize whose answer was lost (or whose retry failed its condition on the entry the first attempt had
   * already moved), or one that landed while a release with the old `n` was in flight.
   */
  resizedTo?: number;
}

/**
 * The fleet-wide, adaptive variant of `DynamoSemaphore`: same contract (`Semaphore`, leases fenced by their
 * id, no TTL, no heartbeat), but the limit lives in the shard items and moves with what holders report
 * (`lease.report`) in the release write they make anyway: no extra DynamoDB write per invocation. Every
 * acquire reads the shards first (a read, not a write) and takes only what is free, so a take fails only
 * when another holder raced it to the same permits.
 *
 * Grants are fractional (multiples of 1/1024 permit): a prefix whose rate x latency is under one permit
 * grants a share of one slot's time, which the holder keeps by resting between attempts
 * (`ExecutorPool.setConcurrency(0.75)`). When the whole semaphore grants less than the request's `min`,
 * all of it is enough: `lease.permits` may then be below `min`.
 */
export class AdaptiveDynamoSemaphore implements Semaphore {
  readonly name: string;
  readonly limit: number;
  readonly leaseMs: number;
  readonly tableName: string;
  /** @internal */
  readonly giveBackTimeoutMs: number;
  /** @internal */
  readonly table: AdaptiveShardTable;
  /** @internal */
  readonly law: ResolvedAdaptiveLimitOptions;
  #shards: number;
  private readonly backoffBaseMs: number;
  private readonly backoffCapMs: number;
  /** @internal */
  readonly now: () => number;
  private readonly random: () => number;

  constructor(options: AdaptiveDynamoSemaphoreOptions) {
    this.name = options.name;
    this.limit = options.limit;
    this.leaseMs = options.leaseMs ?? 60_000;
    this.tableName = options.tableName;
    checkSemaphoreOptions(this);
    this.law = resolveAdaptiveLimitOptions(options.adaptive);
    const seed = initialState(1, this.law).capacity;
    const shards = options.shards ?? Math.max(1, Math.ceil(Math.min(seed, this.limit) / 64));
    const tuning = resolveDynamoTuning(this.name, this.limit, shards, options);
    this.#shards = shards;
    this.backoffBaseMs = tuning.backoffBaseMs;
    this.backoffCapMs = tuning.backoffCapMs;
    this.giveBackTimeoutMs = tuning.giveBackTimeoutMs;
    this.now = options.now ?? (() => Date.now());
    this.random = options.random ?? Math.random;
    this.table = new AdaptiveShardTable(options.client, this.tableName, this.name);
  }

  /** Shard items: the configured count until a survey reads the stored one. */
  get shards(): number {
    return this.#shards;
  }

  async acquire(k: number, options: AcquireOptions = {}): Promise<Lease> {
    const min = checkPermitRequest(this.name, this.limit, k, options);
    const leaseMs = options.leaseMs ?? this.leaseMs;
    const { deadline, signal } = options;
    const fence = newLeaseId();
    let until = 0;
    let enough = min;
    let freeAt: number | undefined;
    const grants = await acquireInRounds({
      name: this.name,
      min,
      enough: () => enough,
      nextRoundAt: () => freeAt,
      deadline,
      signal,
      now: this.now,
      random: this.random,
      backoffBaseMs: this.backoffBaseMs,
      backoffCapMs: acquireBackoffCap(this.backoffCapMs, options.backoffCapMs),
      round: () => {
        until = this.now() + leaseMs;
        return this.#takeUpTo(fence, k, until, options, (least, at) => {
          enough = least;
          freeAt = at;
        });
      },
      giveBack: (short) => this.giveBack(fence, short),
    });
    return new AdaptiveLease(this, fence, grants, k, this.now(), until, options.requests);
  }

  /**
   * @internal Gives back every grant, each with its own step of the control law when `changes` has one; a
   * change whose condition failed (a decrease since the lease was taken) is dropped and the permits given
   * back plainly. Bounded by `signal`, else by `giveBackTimeoutMs`.
   */
  async giveBack(
    fence: string,
    grants: readonly Grant[],
    signal?: AbortSignal,
    changes: ReadonlyMap<number, CapacityChange> = new Map(),
  ): Promise<void> {
    if (grants.length === 0) return;
    const bound = signal ?? AbortSignal.timeout(this.giveBackTimeoutMs);
    await withAbortReason(
      bound,
      Promise.all(
        grants.map(async (g) => {
          const change = changes.get(g.shard);
          const n = g.n;
          let done = await this.table.giveBack(g.shard, fence, n, change, bound);
          if (!done && change !== undefined)
            done = await this.table.giveBack(g.shard, fence, n, undefined, bound);
          // A resize that landed (its answer lost, or arriving while this give-back was in flight) left
          // the resized count in the entry.
          const resized = g.resizedTo;
          if (!done && resized !== undefined && resized !== n)
            await this.table.giveBack(g.shard, fence, resized, undefined, bound);
        }),
      ),
    );
  }

  /**
   * One round: read every shard (create missing ones, reclaim expired holders), then take up to `k` of what
   * is free: the shard that fits the rest whole, else the roomiest in turn. Writes nothing when fewer than
   * `min` are free; it then tells `seen` when the holders expect enough to be free (`freeAt`).
   */
  async #takeUpTo(
    fence: string,
    k: number,
    until: number,
    options: AcquireOptions,
    seen: (enough: number, freeAt: number | undefined) => void,
  ): Promise<Grant[]> {
    const { signal, requests } = options;
    const grants: Grant[] = [];
    const attempted: Grant[] = [];
    try {
      const rooms = await this.#survey(signal);
      // A semaphore that grants less than `min` in all (a limit under one permit) is had whole.
      const capacity = rooms.reduce((sum, r) => sum + r.seen.capacity, 0);
      const enough = Math.min(options.min ?? k, floorToQuantum(capacity));
      if (rooms.reduce((sum, r) => sum + r.free, 0) < enough) {
        seen(enough, freeAt(rooms, enough));
        return grants;
      }
      seen(enough, undefined);
      const start = Math.floor(this.random() * rooms.length);
      const rotated = rooms.map((_, j) => rooms[(start + j) % rooms.length]!);
      const remaining = () => k - grants.reduce((sum, g) => sum + g.n, 0);
      const whole = rotated.find((r) => r.free >= k);
      const order = whole !== undefined ? [whole] : [...rotated].sort((a, b) => b.free - a.free);
      const planned = plan(order, k);
      const estimate = requests === undefined ? undefined : this.#due(planned, requests);
      // Gone by its lease's end whatever it estimates (and a huge one is a number DynamoDB refuses).
      const due = estimate === undefined ? undefined : Math.min(estimate, until);
      for (const room of order) {
        if (remaining() === 0 || room.free <= 0) break;
        const grant = {
          shard: room.index,
          n: floorToQuantum(Math.min(remaining(), room.free)),
          seen: room.seen,
        };
        attempted.push(grant);
        if (await this.table.take(room.index, this.#shards, fence, { n: grant.n, until, due }, signal))
          grants.push(grant);
      }
      return grants;
    } catch (err) {
      // A take whose outcome is unknown is given back too: the conditional give-back is a no-op if it never landed.
      await this.giveBack(fence, attempted).catch(() => undefined);
      throw err;
    }
  }

  /**
   * When a holder of the `planned` grants, making `requests` requests at the rate they stand for
   * (`permits / (latency x slack)`), expects to be done: the time waiters sleep until.
   */
  #due(planned: readonly { n: number; seen: AdaptiveState }[], requests: number): number | undefined {
    return dueAt(planned, requests, this.now(), this.law.inFlightSlack);
  }

  async #survey(signal: AbortSignal | undefined): Promise<Room[]> {
    const items = await this.table.readAll(signal);
    const stored = items[0]?.shards;
    if (stored !== undefined && stored > 0) this.#shards = stored;
    const byIndex = new Map(items.map((item) => [item.index, item]));
    const now = this.now();
    return Promise.all(
      Array.from({ length: this.#shards }, async (_, index) => {
        const item = byIndex.get(index);
        if (item === undefined) {
          // Little's law may start above the hard cap; the limit never exceeds it (`#changes` keeps it there too).
          const seed = initialState(this.#shards, this.law);
          const state = {
            ...seed,
            capacity: Math.min(seed.capacity, floorToQuantum(this.limit / this.#shards)),
          };
          await this.table.create(index, this.#shards, state, signal);
          // Created by us or by a racing acquirer; either way the take is conditional on `free >= n`.
          return {
            index,
            free: floorToQuantum(state.capacity),
            unclamped: state.capacity,
            holders: [],
            seen: state,
          };
        }
        const expired = expiredHolders(item, now);
        const freed = expired.length > 0 ? await this.table.reclaim(index, expired, signal) : 0;
        const seen = { capacity: item.capacity, latencyMs: item.latencyMs, decreasedAt: item.decreasedAt };
        // A reclaim that freed nothing lost to another waiter's (the permits are free, but not in the `free`
        // read) or to a holder that extended: either way they stay holders, due at their past `until`, so
        // `freeAt` polls instead of giving up on a later holder's due with permits free.
        const reclaimed = new Set(freed > 0 ? expired.map(([fence]) => fence) : []);
        return {
          index,
          free: Math.max(0, floorToQuantum(item.free + freed)),
          unclamped: item.free + freed,
          holders: [...item.holders].filter(([fence]) => !reclaimed.has(fence)).map(([, entry]) => entry),
          seen,
        };
      }),
    );
  }
}

/**
 * When a holder of `grants`, making `requests` more requests at the rate they stand for
 * (`permits / (latency x slack)`), expects to be done; undefined without permits.
 */
function dueAt(
  grants: readonly { n: number; seen: AdaptiveState }[],
  requests: number,
  now: number,
  inFlightSlack: number,
): number | undefined {
  const permits = grants.reduce((sum, g) => sum + g.n, 0);
  const latency = grantLatency(grants);
  if (latency === undefined) return undefined;
  return Math.round(now + (requests * latency * inFlightSlack) / permits);
}

/** The shards' measured latency weighted by the permits held on each; undefined without permits. */
function grantLatency(grants: readonly { n: number; seen: AdaptiveState }[]): number | undefined {
  const permits = grants.reduce((sum, g) => sum + g.n, 0);
  if (!(permits > 0)) return undefined;
  return grants.reduce((sum, g) => sum + g.n * g.seen.latencyMs, 0) / permits;
}

/** Waits for every promise to settle, then throws the first rejection if any. */
async function allSettledOrThrow(work: readonly Promise<unknown>[]): Promise<void> {
  const failed = (await Promise.allSettled(work)).find((r) => r.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
}

/** @internal A shard as one round saw it. */
export interface Room {
  index: number;
  /** Permits a take may ask for now (never negative). */
  free: number;
  /** `free` before clamping: negative while holders exceed a shrunk capacity. */
  unclamped: number;
  /** Its holders after reclaiming the expired ones. */
  holders: readonly HolderEntry[];
  seen: AdaptiveState;
}

/** The grants a round would make from `order` (the takes it is about to send), for the holder's due time. */
function plan(order: readonly Room[], k: number): { n: number; seen: AdaptiveState }[] {
  const planned: { n: number; seen: AdaptiveState }[] = [];
  let remaining = k;
  for (const room of order) {
    if (remaining <= 0 || room.free <= 0) break;
    const n = floorToQuantum(Math.min(remaining, room.free));
    planned.push({ n, seen: room.seen });
    remaining -= n;
  }
  return planned;
}

/**
 * @internal (exported for its unit test)
 * The earliest time `enough` permits are expected free, from the holders' announced due times (earliest
 * first); `undefined` when a holder in the way announced none, so only holders that said when they are done
 * can make a waiter sleep, or give up. A time already past means holders running late: the caller polls
 * (they may be done any moment), and a waiter that reaches its deadline so says so (`dueAt`), so its record
 * comes back soon instead of after the backoff of a prefix whose holders said nothing. A holder is gone by
 * its lease's end whatever it announced (an expired holder is reclaimed), so it is due by `until` at the
 * latest.
 */
export function freeAt(rooms: readonly Room[], enough: number): number | undefined {
  const free = rooms.map((r) => r.unclamped);
  const total = () => free.reduce((sum, f) => sum + Math.max(0, floorToQuantum(f)), 0);
  const leaving = rooms
    .flatMap((room, shard) =>
      room.holders.map((h) => ({
        shard,
        n: h.n,
        due: h.due === undefined ? undefined : Math.min(h.due, h.until),
      })),
    )
    .sort((a, b) => (a.due ?? Number.POSITIVE_INFINITY) - (b.due ?? Number.POSITIVE_INFINITY));
  for (const holder of leaving) {
    if (holder.due === undefined) return undefined;
    free[holder.shard]! += holder.n;
    if (total() >= enough) return holder.due;
  }
  return undefined;
}

class AdaptiveLease implements Lease {
  #until: number;
  #releasing: Promise<void> | undefined;
  #usage: LeaseUsage | undefined;
  #resized = false;

  constructor(
    private readonly semaphore: AdaptiveDynamoSemaphore,
    readonly fence: string,
    private readonly grants: readonly Grant[],
    private readonly wanted: number,
    private readonly takenAt: number,
    until: number,
    /** The requests the holder announced at acquire (`AcquireOptions.requests`): a resize re-announces the rest. */
    private readonly requests: number | undefined,
  ) {
    this.#until = until;
  }

  get permits(): number {
    return this.grants.reduce((sum, g) => sum + g.n, 0);
  }

  get expiresAt(): number {
    return this.#until;
  }

  /**
   * The slot time per request the grant was sized with: the shards' measured latency, weighted by the
   * permits taken on each, times the in-flight slack (the grant stands for `permits / latencyMs` a second).
   */
  get latencyMs(): number | undefined {
    const latency = grantLatency(this.grants);
    return latency === undefined ? undefined : latency * this.semaphore.law.inFlightSlack;
  }

  report(usage: LeaseUsage): void {
    this.#usage = usage;
  }

  async resize(usage: LeaseUsage, options: LeaseCallOptions = {}): Promise<number> {
    const limited = usage.writes ?? usage.succeeded + usage.throttled;
    if (this.#resized || this.#releasing !== undefined || !(limited > 0)) return this.permits;
    // No measured time is no sample (NaN: `rescaleForLatency` takes no step).
    const sampleMs = (usage.attemptMs ?? Number.NaN) / limited;
    const { law, limit, shards } = this.semaphore;
    let room = this.wanted - this.permits;
    const steps = this.grants.flatMap((g) => {
      const next = rescaleForLatency(g.seen, sampleMs, shards, law);
      if (next === undefined) return [];
      const capacity = Math.max(g.seen.capacity, Math.min(next.capacity, floorToQuantum(limit / shards)));
      // This lease's share of the rescale (never more than it asked for in all): the rest is free for others.
      // Never more than the rescale's delta either (a grant never exceeds its shard's capacity, so its share
      // never does; kept as the invariant the table's `free` arithmetic relies on).
      const extra = Math.max(
        0,
        Math.min(room, floorToQuantum((g.n * capacity) / g.seen.capacity) - g.n, capacity - g.seen.capacity),
      );
      room -= extra;
      return [{ grant: g, seen: { ...next, capacity }, to: g.n + extra }];
    });
    if (steps.length === 0) return this.permits;
    this.#resized = true;
    const after = this.grants.map((g) => {
      const step = steps.find((s) => s.grant === g);
      return step === undefined ? g : { n: step.to, seen: step.seen };
    });
    const due =
      this.requests === undefined
        ? undefined
        : dueAt(after, Math.max(0, this.requests - limited), this.semaphore.now(), law.inFlightSlack);
    const bound = options.signal ?? AbortSignal.timeout(this.semaphore.giveBackTimeoutMs);
    // Settled only once every shard's request is (one failing does not leave another moving the lease
    // after the caller has moved on to its release).
    await withAbortReason(
      bound,
      allSettledOrThrow(
        steps.map(async ({ grant, seen, to }) => {
          grant.resizedTo = to;
          const done = await this.semaphore.table.resize(
            grant.shard,
            this.fence,
            {
              from: grant.seen.capacity,
              delta: seen.capacity - grant.seen.capacity,
              latencyMs: seen.latencyMs,
              n: grant.n,
              to,
              due: due === undefined ? undefined : Math.min(due, this.#until),
            },
            bound,
          );
          // A failed condition may be our own first attempt's doing (its answer lost, the SDK's retry then
          // finds the entry at `to`): `resizedTo` stays, so the release gives back `to` when `n` is not in the
          // entry (given back only on that exact count, so harmless when the resize really was dropped).
          if (!done) return;
          // Kept once landed: a release already in flight with the old count gives back this one too.
          grant.n = to;
          grant.seen = seen;
        }),
      ),
    );
    return this.permits;
  }

  release(options: LeaseCallOptions = {}): Promise<void> {
    this.#releasing ??= this.semaphore
      .giveBack(this.fence, this.grants, options.signal, this.#changes())
      .catch((err: unknown) => {
        this.#releasing = undefined;
        throw err;
      });
    return this.#releasing;
  }

  async extend(ms: number, options: LeaseCallOptions = {}): Promise<void> {
    checkLeaseMs(this.semaphore.name, ms);
    if (this.#releasing !== undefined) throw new LeaseLostError(this.semaphore.name, this.fence);
    const until = this.semaphore.now() + ms;
    const bound = options.signal ?? AbortSignal.timeout(this.semaphore.giveBackTimeoutMs);
    const kept = await withAbortReason(
      bound,
      Promise.all(this.grants.map((g) => this.semaphore.table.setUntil(g.shard, this.fence, until, bound))),
    );
    if (kept.includes(false)) throw new LeaseLostError(this.semaphore.name, this.fence);
    this.#until = until;
  }

  /** The control law's step for every shard of the lease, from what was reported (none: no change). */
  #changes(): Map<number, CapacityChange> {
    const changes = new Map<number, CapacityChange>();
    const usage = this.#usage;
    if (usage === undefined) return changes;
    const { law, limit, shards } = this.semaphore;
    const outcome = {
      takenAt: this.takenAt,
      releasedAt: this.semaphore.now(),
      permits: this.permits,
      wanted: this.wanted,
      succeeded: usage.succeeded,
      throttled: usage.throttled,
      ...(usage.attemptMs === undefined ? {} : { attemptMs: usage.attemptMs }),
      ...(usage.writes === undefined ? {} : { writes: usage.writes }),
      ...(usage.keptShare === undefined ? {} : { keptShare: usage.keptShare }),
    };
    for (const g of this.grants) {
      const step = adaptLimit(g.seen, outcome, shards, law);
      const capacity = quantize(Math.max(MIN_CAPACITY, Math.min(step.capacity, limit / shards)));
      changes.set(g.shard, {
        from: g.seen.capacity,
        delta: capacity - g.seen.capacity,
        latencyMs: step.latencyMs,
        ...(step.decreased ? { decrease: { at: outcome.releasedAt, takenAt: this.takenAt } } : {}),
      });
    }
    return changes;
  }
}
