import { Agent, createServer, type IncomingMessage, request } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * What the proxy does to a matching request instead of passing it through:
 * - `conflict`: answers `409 ConditionalRequestConflict` without forwarding, as S3 does to a conditional
 *   write that raced another (AWS: retry it). RGW never sends it, so it is played here.
 * - `lose-response`: forwards the request (it lands on the server), then resets the client's connection
 *   instead of passing the answer on: the write happened, the caller cannot know.
 */
export type Fault = 'conflict' | 'lose-response';

export interface ProxiedRequest {
  method: string;
  /** Object key (path after the bucket), decoded. */
  key: string;
  headers: IncomingMessage['headers'];
}

export interface FaultProxy {
  /** `http://127.0.0.1:<port>`: point a path-style S3 client here. */
  readonly endpoint: string;
  /** Applies `fault` to the next `times` requests that `match`. */
  inject(fault: Fault, match: (req: ProxiedRequest) => boolean, times?: number): void;
  /** Faults applied so far, in order. */
  readonly applied: { fault: Fault; method: string; key: string }[];
  stop(): Promise<void>;
}

const CONFLICT_XML =
  '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>ConditionalRequestConflict</Code>' +
  '<Message>A conflicting operation occurred. If using PutObject you can retry the request.</Message>' +
  '<RequestId>fault-proxy</RequestId><HostId>fault-proxy</HostId></Error>';

function keyOf(url: string): string {
  const path = new URL(url, 'http://proxy.invalid').pathname.replace(/^\/+/, '');
  const slash = path.indexOf('/');
  return slash === -1 ? '' : decodeURIComponent(path.slice(slash + 1));
}

/**
 * A plain HTTP proxy on loopback in front of an S3 endpoint that injects chosen faults into chosen requests
 * and passes everything else through unchanged (headers included, so SigV4 signatures still verify).
 */
export async function startFaultProxy(target: string): Promise<FaultProxy> {
  const upstream = new URL(target);
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const sockets = new Set<Socket>();
  const rules: { fault: Fault; match: (req: ProxiedRequest) => boolean; left: number }[] = [];
  const applied: FaultProxy['applied'] = [];

  const server = createServer((req, res) => {
    const method = req.method ?? 'GET';
    const proxied: ProxiedRequest = { method, key: keyOf(req.url ?? '/'), headers: req.headers };
    const rule = rules.find((r) => r.left > 0 && r.match(proxied));
    if (rule !== undefined) {
      rule.left -= 1;
      applied.push({ fault: rule.fault, method, key: proxied.key });
    }
    if (rule?.fault === 'conflict') {
      req.resume();
      req.once('end', () => {
        res.writeHead(409, {
          'content-type': 'application/xml',
          'content-length': Buffer.byteLength(CONFLICT_XML),
        });
        res.end(CONFLICT_XML);
      });
      return;
    }
    const forward = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method,
        path: req.url,
        headers: req.headers,
        agent,
      },
      (answer) => {
        if (rule?.fault === 'lose-response') {
          answer.resume();
          answer.once('end', () => req.socket.destroy());
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.once('error', () => req.socket.destroy());
    req.pipe(forward);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    endpoint: `http://127.0.0.1:${port}`,
    applied,
    inject(fault, match, times = 1) {
      rules.push({ fault, match, left: times });
    },
    async stop() {
      for (const socket of sockets) socket.destroy();
      agent.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
