// `keepConfigCompact` changes only how V8 lays the SDK client's config out: these tests pin that it does
// (so a Node/V8 upgrade that stops it fails here, not silently in bench:cpu) and that nothing observable
// about the config changes.
import { setFlagsFromString } from 'node:v8';
import { S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { createS3Client } from '../../../lib/db/s3-client.js';
import { keepConfigCompact } from '../../../lib/db/s3-client-config-shape.js';
import { loadConfig } from '../../../lib/ingest/config.js';
import { createAwsClients } from '../../../lib/ingest/handler/aws-clients.js';

setFlagsFromString('--allow-natives-syntax');
// Compiled after the flag is set: V8's own check of an object's layout.
const hasFastProperties = new Function('o', 'return %HasFastProperties(o)') as (o: object) => boolean;

const options = {
  endpoint: 'http://127.0.0.1:1',
  region: 'us-east-1',
  credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
};

describe('keepConfigCompact', () => {
  it('the SDK leaves a client config as a hash table, which createS3Client lays out as a fixed shape', () => {
    const plain = new S3Client(options);
    expect(hasFastProperties(plain.config)).toBe(false);
    expect(hasFastProperties(createS3Client(options).config)).toBe(true);
  });

  it('keeps the same object, own properties, order and values', () => {
    const config = new S3Client(options).config as unknown as Record<string, unknown>;
    const before = Object.entries(config);
    const descriptors = Object.getOwnPropertyDescriptors(config);
    keepConfigCompact(config);
    expect(hasFastProperties(config)).toBe(true);
    expect(Object.entries(config)).toEqual(before);
    for (const [key, value] of before) expect(config[key]).toBe(value);
    expect(Object.getOwnPropertyDescriptors(config)).toEqual(descriptors);
    expect(Object.getPrototypeOf(config)).toBe(Object.prototype);
  });

  it('stays compact through calls that write to the config', async () => {
    const client = createS3Client(options);
    // Writes the SDK makes per call (the clock offset after each answer) must not turn it back.
    const config = client.config as unknown as { systemClockOffset: number };
    config.systemClockOffset = 1_000;
    config.systemClockOffset = 0;
    expect(hasFastProperties(client.config)).toBe(true);
    client.destroy();
  });

  it("createAwsClients lays out every client's config, and leaves injected clients alone", () => {
    const config = loadConfig({
      BUCKET_NAME: 'bucket',
      DLQ_URL: 'http://127.0.0.1:1/000000000000/dlq',
      RESOURCES: '{"orders":{}}',
      AWS_ENDPOINT_URL: 'http://127.0.0.1:1',
    });
    const built = createAwsClients(config);
    for (const client of [built.s3, built.sqs, built.dynamodb])
      expect(hasFastProperties(client.config)).toBe(true);
    const injected = new S3Client(options);
    expect(createAwsClients(config, { s3: injected }).s3).toBe(injected);
    expect(hasFastProperties(injected.config)).toBe(false);
    for (const client of [built.s3, built.sqs, built.dynamodb]) client.destroy();
  });
});
