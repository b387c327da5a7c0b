import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it, vi } from 'vitest';
import { createS3Client, openDatabase, S3ObjectStore } from '../../../lib/db/index.js';
import { UndiciHttpHandler } from '../../../lib/db/undici-http-handler.js';

function socketsOf(handler: unknown): number | undefined {
  expect(handler).toBeInstanceOf(UndiciHttpHandler);
  return (handler as UndiciHttpHandler).httpHandlerConfigs().maxSockets;
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
    expect(socketsOf(client.config.requestHandler)).toBe(250);
    client.destroy();
  });

  it('openDatabase sizes its own client to its pool and owns it; an injected client is used as is', async () => {
    const own = openDatabase('http://k:s@127.0.0.1:1/bucket/p', { pool: { concurrency: 300 } });
    const ownClient = (own.store as S3ObjectStore).client;
    expect(socketsOf(ownClient.config.requestHandler)).toBe(300);
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

describe('S3ObjectStore cancellation without per-call SDK options', () => {
  /** An HTTP server that answers PUTs like S3 (200 + ETag), or holds them when `hold` is set. */
  async function fakeS3() {
    const held: IncomingMessage[] = [];
    const closed: string[] = [];
    let hold = false;
    const server = createServer((req, res) => {
      req.resume();
      if (hold) {
        held.push(req);
        res.on('close', () => closed.push(req.url ?? ''));
        return;
      }
      req.on('end', () => {
        res.writeHead(200, { ETag: '"abc"', 'Content-Length': '0' });
        res.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    return {
      endpoint: `http://127.0.0.1:${port}`,
      held,
      closed,
      holdRequests: () => {
        hold = true;
      },
      stop: () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    };
  }

  const credentials = { accessKeyId: 'a', secretAccessKey: 'b' };

  it('resolves each command middleware stack once and still aborts the request and its socket', async () => {
    const server = await fakeS3();
    const client = createS3Client({ endpoint: server.endpoint, credentials, region: 'us-east-1' });
    const store = new S3ObjectStore(client, 'bucket-1');
    const resolve = vi.spyOn(PutObjectCommand.prototype, 'resolveMiddleware');
    try {
      const signal = new AbortController().signal;
      await store.put({ key: 'a', body: '{}' }, { signal });
      await store.put({ key: 'b', body: '{}' }, { signal });
      await store.put({ key: 'c', body: '{}' });
      expect(resolve).toHaveBeenCalledTimes(1);

      server.holdRequests();
      const controller = new AbortController();
      const pending = store.put({ key: 'held', body: '{}' }, { signal: controller.signal });
      await expect.poll(() => server.held.length).toBe(1);
      controller.abort(new Error('pool timeout'));
      await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
      // The request's socket was destroyed: the server sees its response closed.
      await expect.poll(() => server.closed).toEqual(['/bucket-1/held?x-id=PutObject']);
      expect(resolve).toHaveBeenCalledTimes(1);
    } finally {
      resolve.mockRestore();
      client.destroy();
      await server.stop();
    }
  });

  it('with a client it did not build, passes the signal per call (and still cancels)', async () => {
    const server = await fakeS3();
    const client = new S3Client({
      endpoint: server.endpoint,
      credentials,
      region: 'us-east-1',
      forcePathStyle: true,
    });
    const store = new S3ObjectStore(client, 'bucket-1');
    const send = vi.spyOn(client, 'send');
    try {
      server.holdRequests();
      const controller = new AbortController();
      const pending = store.put({ key: 'held', body: '{}' }, { signal: controller.signal });
      await expect.poll(() => server.held.length).toBe(1);
      expect(send.mock.calls[0]![1]).toEqual({ abortSignal: controller.signal });
      controller.abort(new Error('deadline'));
      await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
      await expect.poll(() => server.closed.length).toBe(1);
    } finally {
      client.destroy();
      await server.stop();
    }
  });
});
