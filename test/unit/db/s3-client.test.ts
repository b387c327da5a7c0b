import type { Agent } from 'node:http';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { describe, expect, it } from 'vitest';
import { createS3Client, Database } from '../../../lib/db/index.js';

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

  it('a Database sizes its own client to its pool and owns it; an injected client is used as is', async () => {
    const own = new Database({
      connectionString: 'http://k:s@127.0.0.1:1/bucket/p',
      clientOptions: { executorPool: { concurrency: 300 } },
    });
    expect((await agentOf(own.client.s3!.config.requestHandler)).maxSockets).toBe(300);
    expect(own.client.s3!.config.forcePathStyle).toBe(true);
    const injected = createS3Client({ region: 'eu-west-1' });
    const db = new Database({ connectionString: 's3://bucket-1/p', client: injected });
    expect(db.client.s3).toBe(injected);
    expect(db.bucket).toBe('bucket-1');
    expect(db.prefix).toBe('p/');
    await own.disconnect();
    await db.disconnect();
    injected.destroy();
  });
});
