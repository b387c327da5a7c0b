// The proxy's per-key write queue (ConditionalWrites): a client that goes away while its conditional PUT is
// being checked must not leave the key's queue waiting forever. It did: the check (a HEAD to the emulator)
// took long enough for the SDK's 2 s attempt timeout to abort, the 'close' the queue waits for had already
// fired, and every later write of that key hung until its own timeout: the record was redelivered five
// times and dead-lettered, "lost" in bench:load though S3 never refused it.
import {
  Agent,
  createServer,
  type IncomingMessage,
  request,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ConditionalWrites } from '../../../../lib/local/s3-behaviour/conditional-writes.js';

const servers: Server[] = [];
const agents: Agent[] = [];
afterEach(async () => {
  for (const a of agents.splice(0)) a.destroy();
  await Promise.all(
    servers.splice(0).map(
      (s) =>
        new Promise<void>((resolve) => {
          s.closeAllConnections();
          s.close(() => resolve());
        }),
    ),
  );
});

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<URL> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
}

/** A PUT of `/b/key` through `front`; resolves with its status, or 'aborted'. */
function put(front: URL, headers: Record<string, string>, signal?: AbortSignal): Promise<number | 'aborted'> {
  return new Promise((resolve) => {
    const req = request(
      { hostname: front.hostname, port: front.port, method: 'PUT', path: '/b/key', headers, signal },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', () => resolve('aborted'));
    req.end('body');
  });
}

describe('ConditionalWrites', () => {
  it("frees a key whose conditional PUT's client went away during the check: the next write goes through", async () => {
    // The emulator: HEAD answers only when released (a slow check), PUT at once.
    let headArrived: () => void = () => undefined;
    const headSeen = new Promise<void>((resolve) => {
      headArrived = resolve;
    });
    let releaseHead: () => void = () => undefined;
    const headReleased = new Promise<void>((resolve) => {
      releaseHead = resolve;
    });
    const target = await listen((req, res) => {
      if (req.method === 'HEAD') {
        headArrived();
        void headReleased.then(() => {
          res.writeHead(404);
          res.end();
        });
        return;
      }
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { etag: '"e1"' });
        res.end();
      });
    });
    const agent = new Agent({ keepAlive: true });
    agents.push(agent);
    const writes = new ConditionalWrites(target, agent, (_req, res, status) => {
      res.writeHead(status);
      res.end();
    });
    let frontClosed: () => void = () => undefined;
    const firstClosed = new Promise<void>((resolve) => {
      frontClosed = resolve;
    });
    const front = await listen((req, res) => {
      res.once('close', () => frontClosed());
      writes.write(req, res, 'b/key', () => {
        // Forwarding stands in for the proxy's: answer as the emulator would.
        req.resume();
        req.on('end', () => {
          res.writeHead(200);
          res.end();
        });
      });
    });
    const gone = new AbortController();
    const first = put(front, { 'if-none-match': '*' }, gone.signal);
    await headSeen;
    gone.abort();
    expect(await first).toBe('aborted');
    // The proxy has seen the client go (its response closed) before the check answers.
    await firstClosed;
    releaseHead();
    // The next write of the key is not stuck behind the one whose client left.
    expect(await put(front, {})).toBe(200);
    expect(writes.busyKeys).toBe(0);
  });
});
