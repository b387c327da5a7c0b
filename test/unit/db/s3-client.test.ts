import type { Agent } from 'node:http';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { describe, expect, it, vi } from 'vitest';
import { createS3Client, openDatabase, S3ObjectStore } from '../../../lib/db/index.js';

async function agentOf(handler: unknown): Promise<Agent> {
  const config = await (handler as { configProvider: Promise<{ httpAgentProvider: () => Promise<Agent> }> })
    .configProvider;
  return config.httpAgentProvider();
}

describe('createS3Client', () => {
  it('leaves retries to the pool, keeps sockets alive and sized, goes path-style behind an endpoint', async () => {
    const client = createS3Client({
      endpoint: 'http://127.0.0.1:1',
      credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
      maxSockets: 250,
    });
    expect(await client.config.maxAttempts()).toBe(1);
    expect(client.config.forcePathStyle).toBe(true);
    expect(await client.config.region()).toBeTypeOf('string');
    expect(client.config.requestHandler).toBeInstanceOf(NodeHttpHandler);
    const agent = await agentOf(client.config.requestHandler);
    expect(agent.maxSockets).toBe(250);
    expect((agent as Agent & { keepAlive: boolean }).keepAlive).toBe(true);
    client.destroy();
  });

  it('openDatabase sizes its own client to its pool and owns it; an injected client is used as is', async () => {
    const own = openDatabase('http://k:s@127.0.0.1:1/bucket/p', { pool: { concurrency: 300 } });
    const ownClient = (own.store as S3ObjectStore).client;
    expect((await agentOf(ownClient.config.requestHandler)).maxSockets).toBe(300);
    expect(ownClient.config.forcePathStyle).toBe(true);
    const injected = createS3Client({ region: 'eu-west-1' });
    const destroy = vi.spyOn(injected, 'destroy');
    const db = openDatabase('s3://bucket-1/p', { client: injected });
    expect(db.store).toBeInstanceOf(S3ObjectStore);
    expect((db.store as S3ObjectStore).client).toBe(injected);
    expect(db.bucket).toBe('bucket-1');
    expect(db.prefix).toBe('p/');
    const ownDestroy = vi.spyOn(ownClient, 'destroy');
    await own.disconnect();
    await db.disconnect();
    expect(ownDestroy).toHaveBeenCalledTimes(1);
    expect(destroy).not.toHaveBeenCalled();
    injected.destroy();
  });
});
