// The public API of s3-ingest: everything a user imports. Local emulators live in `s3-ingest/local`
// so the Lambda bundle never pulls them in.

export * from './db/index.js';
export { S3IngestError } from './errors/index.js';
export * from './ingest/index.js';
export * from './pool/index.js';
export * from './semaphore/index.js';
