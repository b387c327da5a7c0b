export { deriveInsertId } from './derive-id.js';
export { type EncodedWrite, type EncodeOptions, encodeWrite, validateWrite } from './encode.js';
export {
  DEFAULT_PRIORITY,
  FORBIDDEN_KEYS,
  KEY_PATTERN,
  MAX_BODY_BYTES,
  MAX_DATA_BYTES,
  MAX_DATA_DEPTH,
  MAX_PRIORITY,
  MIN_PRIORITY,
} from './limits.js';
export { MonotonicSeq, processSeq } from './monotonic-seq.js';
export { type MessageMeta, parseIngestMessage, seqFromSentTimestamp } from './parse.js';
export type {
  DeleteWrite,
  IngestWrite,
  InsertWrite,
  JsonObject,
  JsonValue,
  ProducerWrite,
  ResourceNames,
  UpdateWrite,
  UpsertWrite,
  WriteData,
  WriteOp,
} from './types.js';
export { WRITE_OPS } from './types.js';
