/** A value that survives a JSON round trip unchanged. */
export type JsonValue = null | boolean | number | string | readonly JsonValue[] | JsonObject;
export interface JsonObject {
  readonly [key: string]: JsonValue;
}

export type WriteOp = 'insert' | 'upsert' | 'update' | 'delete';
export const WRITE_OPS: readonly WriteOp[] = ['insert', 'upsert', 'update', 'delete'];

interface IngestWriteBase {
  readonly tenant: string;
  readonly resource: string;
  /** Always set: given by the message, or derived for an `insert` without one (see `idSource`). */
  readonly id: string;
  /** 0..100, higher first; `DEFAULT_PRIORITY` (50) when the message sets none. */
  readonly priority: number;
  /** The producer's idempotency key, when given. */
  readonly key?: string;
  /** The SQS message id the write came from (the handler reports failures by it). */
  readonly messageId: string;
  /**
   * The message id its data is keyed by when it differs from `messageId`: a deferred copy's origin (the
   * handler re-sent the message as a new one). Derived ids and `seq` ties use it.
   */
  readonly originId?: string;
  /** Where `id` came from: the message itself, or derived from `key` or from `messageId`. */
  readonly idSource: 'message' | 'key' | 'message-id';
  /**
   * Orders writes to one record across batches: higher = newer; equal ones are ordered by `messageId`.
   * The message's own `seq`, else SQS's `SentTimestamp` x 1000 (see `seqSource`).
   */
  readonly seq: number;
  /** Where `seq` came from: the message, or SQS's `SentTimestamp` (0 when the record has none). */
  readonly seqSource: 'message' | 'sent-timestamp';
}

export interface InsertWrite extends IngestWriteBase {
  readonly op: 'insert';
  readonly data: JsonObject;
}
export interface UpsertWrite extends IngestWriteBase {
  readonly op: 'upsert';
  readonly data: JsonObject;
}
/** Shallow-merges `data` into the stored record. */
export interface UpdateWrite extends IngestWriteBase {
  readonly op: 'update';
  readonly data: JsonObject;
}
export interface DeleteWrite extends IngestWriteBase {
  readonly op: 'delete';
  readonly data?: undefined;
}

/** One validated write, as the handler applies it. Discriminated by `op`. */
export type IngestWrite = InsertWrite | UpsertWrite | UpdateWrite | DeleteWrite;

/** The JSON-like object a producer hands over as `data` (validated: plain, serializable, within limits). */
export type WriteData = Readonly<Record<string, unknown>>;

interface ProducerWriteBase {
  readonly tenant: string;
  readonly resource: string;
  /** 0..100, higher first; default 50 on the consumer side. */
  readonly priority?: number;
  /**
   * Idempotency key, 1..128 printable ASCII characters. Derives the id of an `insert` without one, and the
   * FIFO deduplication id.
   */
  readonly key?: string;
  /**
   * Orders this write against others to the same record: a non-negative safe integer, higher = newer.
   * Default (the `Producer`): taken from its monotonic source (`MonotonicSeq`), so a later `send` in one
   * process is always newer. Set it yourself to carry a source's own order (a CDC log position, a version).
   */
  readonly seq?: number;
}

/** A write to send through the queue (message contract v1 without `v`, which the producer adds). */
export type ProducerWrite =
  | (ProducerWriteBase & { readonly op: 'insert'; readonly id?: string; readonly data: WriteData })
  | (ProducerWriteBase & { readonly op: 'upsert' | 'update'; readonly id: string; readonly data: WriteData })
  | (ProducerWriteBase & { readonly op: 'delete'; readonly id: string; readonly data?: undefined });

/** The declared resources: a set of names, or the `RESOURCES` map (name -> JSON Schema). */
export type ResourceNames = ReadonlySet<string> | Readonly<Record<string, unknown>>;
