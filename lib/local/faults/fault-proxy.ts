import { Agent, createServer, type IncomingMessage, request, type ServerResponse } from 'node:http';
import { InvalidLocalOptionError } from '../errors.js';
import { forwardedRequest, listenOnLoopback, parseHttpTarget } from '../proxy-server.js';
import { firstSegmentPrefix } from '../s3-behaviour/s3-behaviour-model.js';
import { seededRandom } from '../s3-behaviour/seeded-random.js';
import { type AwsCall, type AwsService, identifyAwsCall } from './aws-call.js';
import { errorAnswer, type WireAnswer } from './fault-answers.js';

/**
 * What the proxy does to a matched call:
 * - `error`: the service's server error (S3 500 `InternalError`, DynamoDB 500 `InternalServerError`, SQS 500
 *   `InternalFailure`); the request never reaches the service.
 * - `throttle`: the service's throttling answer (S3 503 `SlowDown`, DynamoDB 400
 *   `ProvisionedThroughputExceededException`, SQS 400 `RequestThrottled`); never reaches the service.
 * - `stall`: accepted and never answered, never forwarded, until the client gives up (its timeout or abort
 *   closes the connection) or the proxy stops.
 * - `unknown-outcome`: forwarded and applied by the service, whose whole answer is read and then dropped:
 *   the client's connection is reset, so it cannot tell whether the call took effect.
 * - `delay`: forwarded `delayMs` late and answered as the service answers (a slow service, not a failing
 *   one: it sets the stage for other faults, e.g. writes slow enough that a lease asks to be resized); a
 *   request its client gives up on meanwhile is never forwarded.
 */
export type FaultKind = 'error' | 'throttle' | 'stall' | 'unknown-outcome' | 'delay';

/** The faults that fail a call: the fault matrix crosses every call with each. */
export const FAULT_KINDS: readonly FaultKind[] = Object.freeze([
  'error',
  'throttle',
  'stall',
  'unknown-outcome',
]);

/**
 * One fault to inject: which calls, what, how often.
 * @example { name: 'release', match: (c) => c.operation === 'UpdateItem' && c.body.includes('REMOVE'), fault: 'unknown-outcome', times: 1 }
 */
export interface FaultRule {
  /** Label in the proxy's counts. @default the fault kind */
  readonly name?: string;
  /** Selects the calls this rule may fault. */
  readonly match: (call: AwsCall) => boolean;
  readonly fault: FaultKind;
  /**
   * Injections at most; matched calls after that pass through.
   * @default Infinity
   */
  readonly times?: number;
  /**
   * Chance that a matched call is faulted (seeded dice, see `FaultProxyOptions.seed`).
   * @default 1
   */
  readonly probability?: number;
  /**
   * Error code for `error` / `throttle` instead of the service's default (e.g. DynamoDB or SQS
   * `ThrottlingException`).
   * @default the service's code for the kind (table in `fault-answers.ts`)
   */
  readonly code?: string;
  /**
   * How late a `delay` forwards the call, ms (other kinds ignore it).
   * @default 200
   */
  readonly delayMs?: number;
}

/** `FaultRule.delayMs` when the rule gives none. */
export const DEFAULT_DELAY_MS = 200;

export interface FaultProxyOptions {
  /** The service's endpoint (plain HTTP), e.g. the emulator's `http://127.0.0.1:4566`. */
  readonly target: string;
  /** Which protocol to speak in injected answers and how to name calls. */
  readonly service: AwsService;
  /**
   * Faults to inject; the first rule that matches a call (and still has injections left) decides.
   * @default [] (a transparent proxy until `setRules`)
   */
  readonly rules?: readonly FaultRule[];
  /**
   * Seed of the `probability` dice, so one seed and one call sequence give one fault sequence.
   * @default 1
   */
  readonly seed?: number;
  /**
   * Groups calls for the in-flight peaks (`peakInFlight`).
   * @default S3: the key's first segment (`t=acme/`), as S3 partitions; others: the operation
   */
  readonly groupOf?: (call: AwsCall) => string;
  /**
   * Port on 127.0.0.1.
   * @default 0 (any free port)
   */
  readonly port?: number;
}

/** One call that went through the proxy and what happened to it. */
export interface ProxiedCall {
  readonly call: AwsCall;
  /** The rule's name when a fault was injected, else undefined (forwarded untouched). */
  readonly rule: string | undefined;
  readonly fault: FaultKind | undefined;
  /** Epoch ms the whole request had arrived (a per-prefix request log with times: rate checks). */
  readonly at: number;
  /** Status the service answered, when the request reached it (forwarded, or `unknown-outcome`). */
  upstreamStatus?: number;
  /** What a rule's `match` threw for this call (the call then went through untouched). */
  readonly ruleError?: string;
}

export interface FaultProxy {
  /** `http://127.0.0.1:<port>`: point the service's clients here (S3 path-style). */
  readonly endpoint: string;
  readonly service: AwsService;
  /** Replaces the rules (their injection counts start over). */
  setRules(rules: readonly FaultRule[]): void;
  /** Every call so far, in arrival order (copies). */
  calls(): ProxiedCall[];
  /** Injections so far by rule name. */
  injected(): Record<string, number>;
  /** Most calls of each group in flight at once since the start or `resetPeaks()`. */
  peakInFlight(): Record<string, number>;
  resetPeaks(): void;
  /** Stalled requests held right now, and delayed ones not yet forwarded. */
  heldRequests(): number;
  /** Closes the listener and every connection. Idempotent. */
  stop(): Promise<void>;
}

interface ActiveRule {
  readonly rule: FaultRule;
  readonly name: string;
  used: number;
}

function defaultGroup(call: AwsCall): string {
  return call.service === 's3' ? firstSegmentPrefix(call.key) : call.operation;
}

function checkRule(rule: FaultRule, index: number): void {
  const p = rule.probability ?? 1;
  if (!(p >= 0 && p <= 1))
    throw new InvalidLocalOptionError(`rules[${index}].probability`, `must be in [0, 1], got ${p}`);
  const times = rule.times ?? Number.POSITIVE_INFINITY;
  if (!(times >= 0)) throw new InvalidLocalOptionError(`rules[${index}].times`, `must be >= 0, got ${times}`);
  const delayMs = rule.delayMs ?? DEFAULT_DELAY_MS;
  if (!(delayMs >= 0 && Number.isFinite(delayMs)))
    throw new InvalidLocalOptionError(
      `rules[${index}].delayMs`,
      `must be a finite number >= 0, got ${delayMs}`,
    );
}

/**
 * Starts an HTTP proxy in front of one AWS service (S3 REST, DynamoDB or SQS JSON protocol) that injects
 * faults into the calls its rules select and forwards everything else unchanged. The real SDK then meets
 * real wire answers: a 500, a throttle, a request that never returns, or a request that was applied but
 * whose answer was lost.
 */
export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const target = parseHttpTarget(options.target);
  const service = options.service;
  const groupOf = options.groupOf ?? defaultGroup;
  const random = seededRandom(options.seed ?? 1);
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const held = new Set<ServerResponse>();
  const delays = new Set<ReturnType<typeof setTimeout>>();
  const log: ProxiedCall[] = [];
  const injections: Record<string, number> = {};
  const inFlight = new Map<string, number>();
  let peaks: Record<string, number> = {};
  let rules: ActiveRule[] = [];

  const setRules = (next: readonly FaultRule[]): void => {
    next.forEach(checkRule);
    rules = next.map((rule) => ({ rule, name: rule.name ?? rule.fault, used: 0 }));
  };
  setRules(options.rules ?? []);

  const choose = (call: AwsCall): { active?: ActiveRule; ruleError?: string } => {
    for (const active of rules) {
      if (active.used >= (active.rule.times ?? Number.POSITIVE_INFINITY)) continue;
      try {
        if (!active.rule.match(call)) continue;
      } catch (err) {
        // A test's matcher bug must not kill the proxy (and the test process with it): shown in `calls()`.
        return { ruleError: `${active.name}: ${err instanceof Error ? err.message : String(err)}` };
      }
      // Every matched call draws once, so the fault sequence depends only on the seed and the calls.
      if (random() >= (active.rule.probability ?? 1)) continue;
      return { active };
    }
    return {};
  };

  const send = (res: ServerResponse, answer: WireAnswer): void => {
    res.writeHead(answer.status, { ...answer.headers, 'content-length': Buffer.byteLength(answer.body) });
    res.end(answer.body);
  };

  const forward = (
    req: IncomingMessage,
    body: Buffer,
    onAnswer: (status: number, headers: IncomingMessage['headers'], answer: Buffer) => void,
    onError: () => void,
  ): void => {
    const upstream = request(forwardedRequest(target, req, agent), (answer) => {
      const chunks: Buffer[] = [];
      answer.on('data', (c: Buffer) => chunks.push(c));
      answer.on('end', () => onAnswer(answer.statusCode ?? 502, answer.headers, Buffer.concat(chunks)));
      answer.on('error', onError);
    });
    upstream.on('error', onError);
    upstream.end(body);
  };

  /** Forwards the call and relays the service's answer unchanged. */
  const passThrough = (req: IncomingMessage, res: ServerResponse, body: Buffer, entry: ProxiedCall): void =>
    forward(
      req,
      body,
      (status, headers, answer) => {
        entry.upstreamStatus = status;
        if (res.destroyed) return;
        // A HEAD keeps the service's content-length (the object's size, with no body).
        if (headers['content-length'] !== undefined) res.writeHead(status, headers);
        else {
          const { 'transfer-encoding': _chunked, ...rest } = headers;
          res.writeHead(status, { ...rest, 'content-length': answer.length });
        }
        res.end(answer);
      },
      () => {
        if (res.headersSent || res.destroyed) res.destroy();
        else send(res, errorAnswer(service, 'error', 'InternalError'));
      },
    );

  const handle = (req: IncomingMessage, res: ServerResponse, body: Buffer): void => {
    const target = req.headers['x-amz-target'];
    const call = identifyAwsCall(service, {
      method: req.method ?? 'GET',
      url: req.url ?? '/',
      target: Array.isArray(target) ? target[0] : target,
      body: body.toString('utf8'),
    });
    const { active, ruleError } = choose(call);
    const entry: ProxiedCall = {
      call,
      rule: active?.name,
      fault: active?.rule.fault,
      at: Date.now(),
      ...(ruleError === undefined ? {} : { ruleError }),
    };
    log.push(entry);
    if (active !== undefined) {
      active.used += 1;
      injections[active.name] = (injections[active.name] ?? 0) + 1;
    }
    const group = groupOf(call);
    const now = (inFlight.get(group) ?? 0) + 1;
    inFlight.set(group, now);
    if (now > (peaks[group] ?? 0)) peaks[group] = now;
    res.once('close', () => inFlight.set(group, (inFlight.get(group) ?? 1) - 1));

    const fault = active?.rule.fault;
    switch (fault) {
      case 'error':
      case 'throttle':
        send(res, errorAnswer(service, fault, active?.rule.code));
        return;
      case 'stall':
        held.add(res);
        res.once('close', () => held.delete(res));
        return;
      case 'unknown-outcome':
        forward(
          req,
          body,
          (status) => {
            entry.upstreamStatus = status;
            // Applied; the answer is lost on the way back.
            req.socket.destroy();
          },
          () => req.socket.destroy(),
        );
        return;
      case 'delay': {
        const timer = setTimeout(() => {
          delays.delete(timer);
          passThrough(req, res, body, entry);
        }, active?.rule.delayMs ?? DEFAULT_DELAY_MS);
        delays.add(timer);
        // A client that gives up first (its timeout or abort) leaves nothing to forward.
        res.once('close', () => {
          clearTimeout(timer);
          delays.delete(timer);
        });
        return;
      }
      case undefined:
        passThrough(req, res, body, entry);
        return;
    }
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, res, Buffer.concat(chunks)));
  });
  const listening = await listenOnLoopback(server, options.port ?? 0, () => {
    held.clear();
    for (const timer of delays) clearTimeout(timer);
    delays.clear();
    agent.destroy();
  });

  return {
    endpoint: `http://127.0.0.1:${listening.port}`,
    service,
    setRules,
    calls: () => log.map((entry) => ({ ...entry })),
    injected: () => ({ ...injections }),
    peakInFlight: () => ({ ...peaks }),
    resetPeaks: () => {
      peaks = Object.fromEntries(inFlight);
    },
    heldRequests: () => held.size + delays.size,
    stop: listening.stop,
  };
}
