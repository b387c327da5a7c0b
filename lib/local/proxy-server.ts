import type { Agent, IncomingMessage, RequestOptions, Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { InvalidLocalOptionError } from './errors.js';

// Plumbing shared by the local HTTP proxies (the S3 chaos proxy, the fault proxy): their target, the
// request they forward, and a loopback listener that stops cleanly.

/** The `target` option of a proxy: an http:// URL (the emulators speak plain HTTP). */
export function parseHttpTarget(raw: string): URL {
  let target: URL;
  try {
    target = new URL(raw);
  } catch {
    throw new InvalidLocalOptionError('target', `not a URL: ${raw}`);
  }
  if (target.protocol !== 'http:')
    throw new InvalidLocalOptionError('target', 'only http:// targets are supported');
  return target;
}

/** The same request, sent to `target` through `agent` (its Host header rewritten). */
export function forwardedRequest(target: URL, req: IncomingMessage, agent: Agent): RequestOptions {
  return {
    protocol: target.protocol,
    hostname: target.hostname,
    port: target.port,
    method: req.method,
    path: req.url,
    headers: { ...req.headers, host: target.host },
    agent,
  };
}

/** A local test server listening on 127.0.0.1 whose `stop` also ends every open connection. */
export interface LoopbackServer {
  readonly port: number;
  /** Runs `beforeClose`, stops listening and destroys every connection. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts `server` on 127.0.0.1 (`port` 0: any free port), tracking its connections so `stop` does not wait
 * for keep-alive clients; `beforeClose` cancels what the caller holds (timers, stalled answers, agents).
 */
export async function listenOnLoopback(
  server: Server,
  port: number,
  beforeClose: () => void,
): Promise<LoopbackServer> {
  const sockets = new Set<Socket>();
  server.keepAliveTimeout = 5_000;
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  let stopping: Promise<void> | undefined;
  return {
    port: (server.address() as AddressInfo).port,
    stop: () => {
      stopping ??= new Promise<void>((resolve) => {
        beforeClose();
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
      return stopping;
    },
  };
}
