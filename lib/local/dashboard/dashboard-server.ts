import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { DASHBOARD_WIDGETS } from '../../ingest/dashboard-widgets.js';
import { InvalidLocalOptionError } from '../errors.js';
import { listenOnLoopback } from '../proxy-server.js';
import { DASHBOARD_HTML, DASHBOARD_SCRIPT } from './dashboard-page.js';
import type { DashboardSnapshot } from './dashboard-state.js';

export interface DashboardServerOptions {
  /** The page's data at `now` over the last `seconds`. */
  readonly snapshot: (now: number, seconds: number) => DashboardSnapshot;
  /** Changes the S3 model's write limit per prefix (`Infinity`: none); absent: the page cannot change it. */
  readonly setS3WriteLimit?: (writesPerSecond: number) => void;
  /**
   * Port on 127.0.0.1.
   * @default 0 (any free port)
   */
  readonly port?: number;
  /**
   * How often the event stream sends a snapshot, ms.
   * @default 1000
   */
  readonly pushEveryMs?: number;
  /** @default Date.now */
  readonly now?: () => number;
}

export interface DashboardServer {
  /** `http://127.0.0.1:<port>/` */
  readonly url: string;
  /** Ends every event stream, stops listening. Idempotent. */
  stop(): Promise<void>;
}

/** The window a request may ask for, seconds. */
const SECONDS = { min: 10, max: 300, default: 120 } as const;
/** The largest body `PUT /api/s3-limit` reads. */
const MAX_BODY_BYTES = 1_024;
/** The highest S3 write limit the page may set, writes/s per prefix (ten times S3's documented 3,500). */
const MAX_WRITE_LIMIT = 35_000;

/** A request the server refuses: its HTTP status and a one-line reason. */
class RefusedRequest extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:",
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
};

/**
 * The local dashboard's HTTP server, on 127.0.0.1 only: the page (`/`, `/dashboard.js`, no build step and
 * nothing from a CDN), the widget definitions (`/api/widgets`), a snapshot (`/api/snapshot?seconds=N`), a
 * server-sent event stream of snapshots (`/events?seconds=N`) and the S3 model's limit
 * (`PUT /api/s3-limit` `{"writesPerSecond": N}`). A request it cannot serve gets a 4xx and a one-line
 * reason; nothing a client sends can stop it or the stack. A Host header other than the loopback address
 * it listens on is refused (403), so a web page elsewhere cannot reach it by DNS rebinding.
 */
export async function startDashboardServer(options: DashboardServerOptions): Promise<DashboardServer> {
  const now = options.now ?? Date.now;
  const pushEveryMs = options.pushEveryMs ?? 1_000;
  const streams = new Set<{ res: ServerResponse; seconds: number }>();
  let port = 0;

  const push = () => {
    if (streams.size === 0) return;
    const at = now();
    for (const stream of streams) {
      stream.res.write(`data: ${JSON.stringify(options.snapshot(at, stream.seconds))}\n\n`);
    }
  };
  const timer = setInterval(push, pushEveryMs);

  const route = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const host = req.headers.host ?? '';
    if (host !== `127.0.0.1:${port}` && host !== `localhost:${port}`)
      throw new RefusedRequest(403, `Host ${JSON.stringify(host)} is not this loopback server`);
    const url = new URL(req.url ?? '/', `http://127.0.0.1:${port}`);
    const only = (method: string) => {
      if (req.method !== method && !(method === 'GET' && req.method === 'HEAD'))
        throw new RefusedRequest(405, `${url.pathname} takes ${method}`, { allow: method });
    };
    switch (url.pathname) {
      case '/':
        only('GET');
        return send(res, 200, 'text/html; charset=utf-8', DASHBOARD_HTML);
      case '/dashboard.js':
        only('GET');
        return send(res, 200, 'text/javascript; charset=utf-8', DASHBOARD_SCRIPT);
      case '/api/widgets':
        only('GET');
        return sendJson(res, 200, DASHBOARD_WIDGETS);
      case '/api/snapshot':
        only('GET');
        return sendJson(res, 200, options.snapshot(now(), secondsOf(url)));
      case '/events': {
        only('GET');
        const stream = { res, seconds: secondsOf(url) };
        res.writeHead(200, { ...SECURITY_HEADERS, 'content-type': 'text/event-stream' });
        res.write(`retry: 2000\ndata: ${JSON.stringify(options.snapshot(now(), stream.seconds))}\n\n`);
        streams.add(stream);
        res.once('close', () => streams.delete(stream));
        return;
      }
      case '/api/s3-limit': {
        only('PUT');
        if (options.setS3WriteLimit === undefined)
          throw new RefusedRequest(409, 'this stack has no S3 model to limit');
        const writesPerSecond = parseLimit(await readJson(req));
        options.setS3WriteLimit(writesPerSecond);
        return sendJson(res, 200, { writesPerSecond });
      }
      default:
        throw new RefusedRequest(404, `no such page: ${url.pathname}`);
    }
  };

  const server = createServer((req, res) => {
    route(req, res).catch((error: unknown) => {
      const refused = error instanceof RefusedRequest ? error : new RefusedRequest(500, 'internal error');
      if (res.headersSent) {
        res.destroy();
        return;
      }
      // The body may be left unread (too large, wrong type): answer, then close the connection.
      res.setHeader('connection', 'close');
      send(res, refused.status, 'text/plain; charset=utf-8', `${refused.message}\n`, refused.headers);
    });
  });
  // A malformed request line or header: a 400, and the socket goes; the server carries on.
  server.on('clientError', (_error, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
    else socket.destroy();
  });
  const listening = await listenOnLoopback(server, checkPort(options.port ?? 0), () => {
    clearInterval(timer);
    for (const { res } of streams) res.end();
    streams.clear();
  });
  port = listening.port;
  return { url: `http://127.0.0.1:${port}/`, stop: listening.stop };
}

function checkPort(port: number): number {
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw new InvalidLocalOptionError('port', `must be an integer in [0, 65535], got ${port}`);
  return port;
}

function secondsOf(url: URL): number {
  const raw = url.searchParams.get('seconds');
  if (raw === null) return SECONDS.default;
  const seconds = Number(raw);
  if (!/^\d+$/.test(raw) || seconds < SECONDS.min || seconds > SECONDS.max)
    throw new RefusedRequest(
      400,
      `seconds must be an integer in [${SECONDS.min}, ${SECONDS.max}], got ${JSON.stringify(raw)}`,
    );
  return seconds;
}

function parseLimit(body: unknown): number {
  const value = (body as { writesPerSecond?: unknown } | null)?.writesPerSecond;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > MAX_WRITE_LIMIT)
    throw new RefusedRequest(400, `writesPerSecond must be a number in (0, ${MAX_WRITE_LIMIT}]`);
  return value;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const type = req.headers['content-type'] ?? '';
  if (!/^application\/json\s*(;|$)/i.test(type))
    throw new RefusedRequest(415, 'the body must be application/json');
  if (Number(req.headers['content-length'] ?? 0) > MAX_BODY_BYTES)
    throw new RefusedRequest(413, `the body must be at most ${MAX_BODY_BYTES} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES)
      throw new RefusedRequest(413, `the body must be at most ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new RefusedRequest(400, 'the body is not JSON');
  }
}

function send(
  res: ServerResponse,
  status: number,
  type: string,
  body: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    ...headers,
    'content-type': type,
    'content-length': Buffer.byteLength(body),
  });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(value));
}
