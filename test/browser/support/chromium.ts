import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Headless Chromium (Debian's `chromium`) driven over the DevTools protocol with Node's own WebSocket: no
 * browser download, no driver package. Enough for a test: open a page, read its DOM, take a screenshot.
 */
export interface Browser {
  /** Opens `url` in the page and waits for its load event. */
  open(url: string): Promise<void>;
  /** The value of `expression` in the page (awaited if it is a promise; JSON-serializable). */
  evaluate<T>(expression: string): Promise<T>;
  /** A PNG of the whole page. */
  screenshot(): Promise<Buffer>;
  close(): Promise<void>;
}

/** The browser binary: `CHROMIUM` if set, else `chromium` on the PATH. */
export const CHROMIUM = process.env.CHROMIUM ?? 'chromium';

interface CdpAnswer {
  id?: number;
  method?: string;
  result?: Record<string, unknown>;
  error?: { message: string };
}

export async function launchChromium(size = { width: 1400, height: 1000 }): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 's3-ingest-chromium-'));
  const child: ChildProcess = spawn(
    CHROMIUM,
    [
      '--headless',
      // As root (CI) Chromium refuses to start with its sandbox; the page is our own local one.
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--no-first-run',
      '--hide-scrollbars',
      '--remote-debugging-port=0',
      `--user-data-dir=${profile}`,
      `--window-size=${size.width},${size.height}`,
      'about:blank',
    ],
    // Chromium's own temporary files (org.chromium.Chromium.*) go under the profile, removed with it.
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, TMPDIR: profile } },
  );
  const cleanup = () => rmSync(profile, { recursive: true, force: true });
  try {
    const browserUrl = await devToolsUrl(child);
    const { host } = new URL(browserUrl);
    const targets = (await (await fetch(`http://${host}/json/list`)).json()) as {
      type: string;
      webSocketDebuggerUrl: string;
    }[];
    const page = targets.find((t) => t.type === 'page');
    if (page === undefined) throw new Error('Chromium opened no page');
    const socket = new WebSocket(page.webSocketDebuggerUrl);
    await new Promise((resolve, reject) => {
      socket.addEventListener('open', resolve, { once: true });
      socket.addEventListener('error', () => reject(new Error('DevTools WebSocket failed')), { once: true });
    });
    let nextId = 0;
    const pending = new Map<
      number,
      { resolve: (r: Record<string, unknown>) => void; reject: (e: Error) => void }
    >();
    const events = new Map<string, (() => void)[]>();
    socket.addEventListener('message', (event) => {
      const answer = JSON.parse(String(event.data)) as CdpAnswer;
      if (answer.id !== undefined) {
        const call = pending.get(answer.id);
        pending.delete(answer.id);
        if (answer.error !== undefined) call?.reject(new Error(answer.error.message));
        else call?.resolve(answer.result ?? {});
      } else if (answer.method !== undefined) {
        for (const listener of events.get(answer.method)?.splice(0) ?? []) listener();
      }
    });
    const send = (method: string, params: Record<string, unknown> = {}) =>
      new Promise<Record<string, unknown>>((resolve, reject) => {
        const id = ++nextId;
        pending.set(id, { resolve, reject });
        socket.send(JSON.stringify({ id, method, params }));
      });
    const next = (method: string) =>
      new Promise<void>((resolve) => {
        events.set(method, [...(events.get(method) ?? []), resolve]);
      });
    await send('Page.enable');
    await send('Emulation.setDeviceMetricsOverride', { ...size, deviceScaleFactor: 1, mobile: false });
    return {
      open: async (url) => {
        const loaded = next('Page.loadEventFired');
        await send('Page.navigate', { url });
        await loaded;
      },
      evaluate: async <T>(expression: string) => {
        const answer = (await send('Runtime.evaluate', {
          expression,
          returnByValue: true,
          awaitPromise: true,
        })) as {
          result: { value: T };
          exceptionDetails?: { text: string; exception?: { description?: string } };
        };
        if (answer.exceptionDetails !== undefined)
          throw new Error(answer.exceptionDetails.exception?.description ?? answer.exceptionDetails.text);
        return answer.result.value;
      },
      screenshot: async () => {
        const { data } = (await send('Page.captureScreenshot', {
          format: 'png',
          captureBeyondViewport: true,
        })) as {
          data: string;
        };
        return Buffer.from(data, 'base64');
      },
      close: async () => {
        socket.close();
        if (child.exitCode === null) {
          child.kill('SIGTERM');
          await once(child, 'exit');
        }
        cleanup();
      },
    };
  } catch (error) {
    if (child.exitCode === null) child.kill('SIGKILL');
    cleanup();
    throw error;
  }
}

/** The browser's DevTools WebSocket URL, which Chromium prints on stderr once it listens. */
function devToolsUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let stderr = '';
    const onData = (chunk: Buffer) => {
      stderr += chunk.toString();
      const found = /DevTools listening on (ws:\/\/\S+)/.exec(stderr);
      if (found !== null) {
        child.stderr?.off('data', onData);
        child.stderr?.resume();
        resolve(found[1]!);
      }
    };
    child.stderr?.on('data', onData);
    child.once('error', (error) => reject(new Error(`cannot start ${CHROMIUM}: ${error.message}`)));
    child.once('exit', (code) =>
      reject(new Error(`${CHROMIUM} exited with ${code} before listening:\n${stderr}`)),
    );
  });
}
