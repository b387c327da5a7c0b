import { randomBytes } from 'node:crypto';
import { Agent, createServer, type IncomingMessage, request, type ServerResponse } from 'node:http';
import { forwardedRequest, listenOnLoopback, parseHttpTarget } from '../proxy-server.js';
import { S3BehaviourModel, type S3BehaviourOptions, type S3RequestKind } from './s3-behaviour-model.js';

export interface ChaosProxyOptions {
  /** Endpoint of the S3 emulator (or any S3 endpoint speaking plain HTTP), e.g. `http://127.0.0.1:4566`. */
  target: string;
  /** The model to apply, or options to build one. */
  model: S3BehaviourModel | S3BehaviourOptions;
  /** Port on 127.0.0.1. Default 0 (any free port). */
  port?: number;
}

export interface ChaosProxy {
  /** `http://127.0.0.1:<port>`: point S3 clients here (path-style). */
  endpoint: string;
  model: S3BehaviourModel;
  /** Requests held right now (waiting out their latency or stall); drops when their clients go away. */
  heldRequests(): number;
  /** Closes the listener and every open connection, cancels stalls. Idempotent. */
  stop(): Promise<void>;
}

/** What S3 answers; the SDK turns `Code` into the error's `name`. */
function s3ErrorXml(code: string, message: string, requestId: string, hostId: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message><RequestId>${requestId}</RequestId><HostId>${hostId}</HostId></Error>`;
}

const WRITE_METHODS = new Set(['PUT', 'DELETE', 'POST']);

/**
 * Classifies a path-style request: writes are PUT/DELETE/POST, everything else reads. The key is the
 * object key after the bucket; a bucket-level request (ListObjectsV2) is limited under its `prefix` query.
 */
export function classifyS3Request(method: string, url: string): { kind: S3RequestKind; key: string } {
  const parsed = new URL(url, 'http://proxy.invalid');
  const path = parsed.pathname.replace(/^\/+/, '');
  const slash = path.indexOf('/');
  const rawKey = slash === -1 ? '' : path.slice(slash + 1);
  let key: string;
  try {
    key = decodeURIComponent(rawKey);
  } catch {
    key = rawKey;
  }
  if (key === '') key = parsed.searchParams.get('prefix') ?? '';
  return { kind: WRITE_METHODS.has(method.toUpperCase()) ? 'write' : 'read', key };
}

/**
 * Starts an HTTP proxy in front of an S3 endpoint that applies an {@link S3BehaviourModel} to every request:
 * real `503 SlowDown` / `500 InternalError` XML answers, connection resets and stalled responses, so the real
 * SDK sees what S3 does under load.
 */
export async function startChaosProxy(options: ChaosProxyOptions): Promise<ChaosProxy> {
  const target = parseHttpTarget(options.target);
  const model =
    options.model instanceof S3BehaviourModel ? options.model : new S3BehaviourModel(options.model);
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const timers = new Set<NodeJS.Timeout>();

  const after = (ms: number, res: ServerResponse, then: () => void): void => {
    if (ms <= 0) {
      then();
      return;
    }
    const timer = setTimeout(() => {
      timers.delete(timer);
      res.off('close', cancel);
      then();
    }, ms);
    const cancel = () => {
      clearTimeout(timer);
      timers.delete(timer);
    };
    timers.add(timer);
    // The client gave up (abort, timeout, stop): drop the pending answer with it.
    res.once('close', cancel);
  };

  const answerError = (
    req: IncomingMessage,
    res: ServerResponse,
    status: number,
    code: string,
    message: string,
  ) => {
    req.resume();
    const requestId = randomBytes(8).toString('hex').toUpperCase();
    const hostId = randomBytes(24).toString('base64');
    const body = s3ErrorXml(code, message, requestId, hostId);
    res.writeHead(status, {
      'content-type': 'application/xml',
      'content-length': Buffer.byteLength(body),
      'x-amz-request-id': requestId,
      'x-amz-id-2': hostId,
    });
    res.end(body);
  };

  const forward = (req: IncomingMessage, res: ServerResponse) => {
    const upstream = request(forwardedRequest(target, req, agent), (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => {
      if (res.headersSent) res.destroy();
      else answerError(req, res, 502, 'BadGateway', 'The chaos proxy could not reach its target.');
    });
    res.once('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  };

  const server = createServer((req, res) => {
    const { kind, key } = classifyS3Request(req.method ?? 'GET', req.url ?? '/');
    const decision = model.decide(kind, key);
    switch (decision.outcome) {
      case 'ok':
        after(decision.latencyMs, res, () => forward(req, res));
        return;
      case 'slowdown':
        after(decision.latencyMs, res, () =>
          answerError(req, res, 503, 'SlowDown', 'Please reduce your request rate.'),
        );
        return;
      case 'internal-error':
        after(decision.latencyMs, res, () =>
          answerError(req, res, 500, 'InternalError', 'We encountered an internal error. Please try again.'),
        );
        return;
      case 'reset':
        after(decision.latencyMs, res, () => req.socket.destroy());
        return;
      case 'stall':
        // Hang without a byte of answer; if the client is still there when the stall ends, serve it late.
        after(decision.latencyMs, res, () => forward(req, res));
        return;
    }
  });
  const listening = await listenOnLoopback(server, options.port ?? 0, () => {
    for (const timer of timers) clearTimeout(timer);
    timers.clear();
    agent.destroy();
  });

  return {
    endpoint: `http://127.0.0.1:${listening.port}`,
    model,
    heldRequests: () => timers.size,
    stop: listening.stop,
  };
}
