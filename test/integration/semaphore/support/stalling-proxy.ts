import { EventEmitter, once } from 'node:events';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An HTTP proxy in front of an AWS endpoint that stalls the requests `stall(body)` selects: it accepts
 * them, reads them, and never answers (a service that hangs, or a black-holed connection). Every other
 * request is forwarded unchanged. Without a target every request stalls. Emits `stalled` (with the body)
 * when it starts stalling one, so tests await that instead of sleeping. Requests `lose(body)` selects are
 * forwarded, and their answers dropped (the connection is cut once the service has answered): a write
 * that applied while its caller saw a network error, which the SDK retries.
 */
export interface StallingProxy extends EventEmitter {
  readonly endpoint: string;
  /** Requests stalled so far. */
  readonly stalledCount: number;
  /** Resolves on the next stalled request. */
  nextStall(): Promise<string>;
  close(): Promise<void>;
}

export async function startStallingProxy(options: {
  target?: string;
  stall?: (body: string) => boolean;
  lose?: (body: string) => boolean;
}): Promise<StallingProxy> {
  const events = new EventEmitter();
  const stall = options.stall ?? (() => true);
  const target = options.target === undefined ? undefined : new URL(options.target);
  let stalledCount = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const text = body.toString('utf8');
      if (target === undefined || stall(text)) {
        stalledCount++;
        events.emit('stalled', text);
        return; // never answered
      }
      const upstream = request(
        {
          host: target.hostname,
          port: target.port,
          method: req.method,
          path: req.url,
          headers: req.headers,
        },
        (answer) => {
          if (options.lose?.(text)) {
            answer.resume();
            answer.on('end', () => res.destroy());
            return;
          }
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      upstream.end(body);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  // defineProperty, not Object.assign: assign would copy the getter's current value once.
  Object.defineProperty(events, 'stalledCount', { get: () => stalledCount });
  return Object.assign(events as EventEmitter & { readonly stalledCount: number }, {
    endpoint: `http://127.0.0.1:${port}`,
    nextStall: async () => (await once(events, 'stalled'))[0] as string,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
}
