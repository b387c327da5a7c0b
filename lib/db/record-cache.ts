import type { RecordState } from './sequenced-state.js';

/** A record's state as this process last wrote or read it, with the ETag it had then. */
export interface CachedRecord {
  readonly etag: string;
  /** Never mutated: callers clone it before applying writes. */
  readonly state: RecordState;
  /** Stored body size, what the cache's byte bound counts. */
  readonly bytes: number;
}

/**
 * The last known state of recently written records, so a sequenced write to a record this process wrote
 * before is one conditional PUT (`If-Match` on the cached ETag) instead of a GET and a PUT. Never trusted
 * blindly: if anyone else wrote the record since, the PUT fails its precondition and the writer re-reads.
 * LRU, bounded by entries and by stored bytes.
 */
export class RecordCache {
  readonly #entries = new Map<string, CachedRecord>();
  #bytes = 0;

  /**
   * @param maxEntries records kept (0 disables the cache).
   * @param maxBytes sum of their stored sizes kept.
   */
  constructor(
    readonly maxEntries = 1_000,
    readonly maxBytes = 8 * 1024 * 1024,
  ) {}

  get(key: string): CachedRecord | undefined {
    const entry = this.#entries.get(key);
    if (entry !== undefined) {
      this.#entries.delete(key);
      this.#entries.set(key, entry);
    }
    return entry;
  }

  set(key: string, entry: CachedRecord): void {
    this.delete(key);
    if (this.maxEntries === 0 || entry.bytes > this.maxBytes) return;
    this.#entries.set(key, entry);
    this.#bytes += entry.bytes;
    for (const [oldest, old] of this.#entries) {
      if (this.#entries.size <= this.maxEntries && this.#bytes <= this.maxBytes) break;
      this.#entries.delete(oldest);
      this.#bytes -= old.bytes;
    }
  }

  delete(key: string): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    this.#entries.delete(key);
    this.#bytes -= entry.bytes;
  }

  get size(): number {
    return this.#entries.size;
  }
}
