/** A running count of one prefix's S3 write requests, from `watch` until `stop`. */
export interface WriteWatch {
  /** Write requests sent to the prefix since the watch began (refused ones included). */
  readonly count: number;
  /** Stops counting (idempotent); `count` keeps its last value. */
  stop(): void;
}

/**
 * Counts the S3 write requests (PUT, DELETE) of the tenant prefixes someone watches, from the container's
 * store: a prefix lease's usage report tells the semaphore its writes apart from its reads (S3 limits them
 * apart). A prefix is the key up to its first `/`, i.e. `tenantPrefix(tenant)` with no base prefix, the
 * layout of the handler's Databases. Only watched prefixes are counted, so what it keeps is the leases held
 * now, however many tenants the container has seen.
 */
export class PrefixWriteCounts {
  readonly #watched = new Map<string, Set<{ count: number }>>();

  /** Called by the store before each write request, with the object key. */
  count(key: string): void {
    if (this.#watched.size === 0) return;
    const watchers = this.#watched.get(key.slice(0, key.indexOf('/') + 1));
    if (watchers === undefined) return;
    for (const watcher of watchers) watcher.count += 1;
  }

  /** Starts counting the writes to `prefix` (`t=<tenant>/`). */
  watch(prefix: string): WriteWatch {
    const counter = { count: 0 };
    let watchers = this.#watched.get(prefix);
    if (watchers === undefined) {
      watchers = new Set();
      this.#watched.set(prefix, watchers);
    }
    watchers.add(counter);
    const watched = this.#watched;
    return {
      get count() {
        return counter.count;
      },
      stop() {
        const set = watched.get(prefix);
        if (set?.delete(counter) === true && set.size === 0) watched.delete(prefix);
      },
    };
  }

  /** Prefixes watched now. */
  get watching(): number {
    return this.#watched.size;
  }
}
