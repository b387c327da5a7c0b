import { type Agent, type IncomingMessage, request, type ServerResponse } from 'node:http';

/** How the gate answers a failed precondition: the proxy's S3 error XML writer. */
export type AnswerS3Error = (
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  code: string,
  message: string,
) => void;

/** Why a conditional PUT is refused: its condition fails on an object, or `If-Match` meets none. */
type Refusal = 'precondition' | 'missing';

/** A check the emulator does not answer in this long fails (answered 500): it must not hold the key's queue. */
const CHECK_TIMEOUT_MS = 5_000;

/** Strips a weak marker and quotes: `W/"abc"` and `"abc"` compare as `abc`. */
function bareEtag(value: string): string {
  return value.trim().replace(/^W\//, '').replace(/^"|"$/g, '');
}

/**
 * S3's conditional writes in front of an emulator that accepts `If-None-Match` / `If-Match` on PutObject but
 * does not enforce them (fauxqs; design.md, "S3 conditional writes"). Every PUT and DELETE of one key goes
 * through a per-key queue; a conditional PUT first reads the object's current ETag from the target (a HEAD)
 * and is answered as S3 answers it when the condition fails: `412 PreconditionFailed` when `If-None-Match: *`
 * meets an object or `If-Match` another ETag, `404 NoSuchKey` when `If-Match` meets no object. So concurrent
 * writers on the local stack lose races the way they do on S3 (a stale `If-Match` cannot overwrite a newer
 * object), which the sequenced write path relies on. Writes to one key are serialised in this proxy only:
 * another client writing to the emulator directly bypasses it.
 */
export class ConditionalWrites {
  readonly #tails = new Map<string, Promise<void>>();

  constructor(
    private readonly target: URL,
    private readonly agent: Agent,
    private readonly answerError: AnswerS3Error,
  ) {}

  /** Keys with a write queued or in flight (tests; empty when idle). */
  get busyKeys(): number {
    return this.#tails.size;
  }

  /**
   * Runs `forward(req, res)` for a write of `key` after the writes queued before it, checking a PUT's
   * precondition first. Reads and bucket-level requests should not come here.
   */
  write(req: IncomingMessage, res: ServerResponse, key: string, forward: () => void): void {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    const done = previous.then(() => this.#writeNow(req, res, forward));
    const tail = done.then(
      () => undefined,
      () => undefined,
    );
    this.#tails.set(key, tail);
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
  }

  async #writeNow(req: IncomingMessage, res: ServerResponse, forward: () => void): Promise<void> {
    if (res.destroyed) return;
    let refusal: Refusal | undefined;
    try {
      refusal = req.method === 'PUT' ? await this.#refusal(req) : undefined;
    } catch {
      // The emulator did not answer the check: answer as S3 does when it cannot (the client retries).
      if (!res.destroyed)
        this.answerError(req, res, 500, 'InternalError', 'We encountered an internal error.');
      return;
    }
    // The client may have gone while the check ran (its attempt timed out): its 'close' has fired already,
    // and waiting for it below would hold every later write of this key for good.
    if (res.destroyed || res.closed) return;
    if (refusal === 'precondition') {
      this.answerError(
        req,
        res,
        412,
        'PreconditionFailed',
        'At least one of the pre-conditions you specified did not hold',
      );
      return;
    }
    if (refusal === 'missing') {
      this.answerError(req, res, 404, 'NoSuchKey', 'The specified key does not exist.');
      return;
    }
    await new Promise<void>((resolve) => {
      // The key is free again once the target has answered (or the client went away).
      res.once('close', () => resolve());
      forward();
    });
  }

  /** Why S3 would refuse this PUT's condition now (`undefined`: it holds, or there is none). */
  async #refusal(req: IncomingMessage): Promise<Refusal | undefined> {
    const ifNoneMatch = header(req, 'if-none-match');
    const ifMatch = header(req, 'if-match');
    if (ifNoneMatch === undefined && ifMatch === undefined) return undefined;
    const current = await this.#currentEtag(req);
    if (ifNoneMatch?.trim() === '*' && current !== undefined) return 'precondition';
    if (ifMatch === undefined) return undefined;
    if (current === undefined) return 'missing';
    const wanted = bareEtag(ifMatch);
    return wanted !== '*' && wanted !== bareEtag(current) ? 'precondition' : undefined;
  }

  /** The object's ETag at the target now (`undefined`: no such object). */
  #currentEtag(req: IncomingMessage): Promise<string | undefined> {
    const path = (req.url ?? '/').split('?')[0]!;
    return new Promise((resolve, reject) => {
      const head = request(
        {
          hostname: this.target.hostname,
          port: this.target.port,
          method: 'HEAD',
          path,
          agent: this.agent,
          headers: { host: req.headers.host ?? this.target.host },
        },
        (answer) => {
          answer.resume();
          const etag = answer.headers.etag;
          resolve(answer.statusCode === 200 && typeof etag === 'string' ? etag : undefined);
        },
      );
      head.on('error', reject);
      head.setTimeout(CHECK_TIMEOUT_MS, () => head.destroy(new Error('conditional write check timed out')));
      head.end();
    });
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
