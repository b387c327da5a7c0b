import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { RunDir } from './run-dir.js';

/** A server process this run started, with its output in `logFile`. */
export interface Daemon {
  readonly name: string;
  readonly process: ChildProcess;
  readonly logFile: string;
  /** Rejects (naming the daemon and quoting its log) when the process exits before `stop()` is called. */
  readonly failed: Promise<never>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. Idempotent. */
  stop(graceMs?: number): Promise<void>;
}

const live = new Set<ChildProcess>();
const exitCleanups = new Set<() => void>();
let hooksInstalled = false;

/**
 * Last line of defence when the test runner dies without running its teardown: every daemon still alive is
 * killed, and every registered cleanup run, when this process exits or is told to stop, so no server
 * outlives the run. (Only SIGKILL escapes this; the next run sweeps what it leaves, see run-dir.ts.)
 */
function installExitHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  const cleanUp = () => {
    for (const child of live) child.kill('SIGKILL');
    live.clear();
    for (const cleanup of exitCleanups) cleanup();
    exitCleanups.clear();
  };
  process.once('exit', cleanUp);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = () => {
      cleanUp();
      // Someone else (the test runner) handles this signal and exits; otherwise exit as the signal would.
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    };
    process.once(signal, onSignal);
  }
}

/** Runs `cleanup` (synchronous) when this process exits or is stopped by a signal, unless removed first. */
export function onProcessExit(cleanup: () => void): () => void {
  installExitHooks();
  exitCleanups.add(cleanup);
  return () => exitCleanups.delete(cleanup);
}

/** Last `lines` lines of a log file, for error messages. */
export function tailOf(file: string, lines = 20): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** Starts `command` in the foreground of its own log file (stdout and stderr), tracked for cleanup. */
export function startDaemon(
  name: string,
  command: string,
  args: readonly string[],
  options: { cwd: string; logFile: string; runDir: RunDir },
): Daemon {
  installExitHooks();
  const fd = openSync(options.logFile, 'a');
  const child = spawn(command, args, { cwd: options.cwd, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  live.add(child);
  if (child.pid !== undefined) options.runDir.track(child.pid);
  let stopping = false;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      live.delete(child);
      resolve();
    });
    child.once('error', () => {
      live.delete(child);
      resolve();
    });
  });
  const failed = exited.then(() => {
    if (stopping) return new Promise<never>(() => {});
    throw new Error(
      `${name} (${command}) exited with ${child.exitCode ?? child.signalCode ?? 'an error'} before it was stopped; ` +
        `its log (${options.logFile}):\n${tailOf(options.logFile)}`,
    );
  });
  failed.catch(() => {}); // observed by whoever awaits it; never an unhandled rejection
  return {
    name,
    process: child,
    logFile: options.logFile,
    failed,
    async stop(graceMs = 3_000) {
      stopping = true;
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Runs a command to completion; rejects with its output when it fails or outlives `timeoutMs`. Tracked like
 * a daemon while it runs, so a stopped run does not leave a tool waiting for a monitor that is gone.
 */
export async function run(
  command: string,
  args: readonly string[],
  options: { cwd: string; timeoutMs?: number; signal?: AbortSignal },
): Promise<string> {
  installExitHooks();
  return new Promise((resolve, reject) => {
    const child = execFile(
      command,
      args,
      {
        cwd: options.cwd,
        timeout: options.timeoutMs ?? 60_000,
        maxBuffer: 16 * 1024 * 1024,
        ...(options.signal !== undefined ? { signal: options.signal } : {}),
      },
      (err, stdout, stderr) => {
        live.delete(child);
        if (err === null) {
          resolve(stdout);
          return;
        }
        const output = `${stderr}${stdout}`.trimEnd().split('\n').slice(0, 15).join('\n');
        const how = err.signal ?? err.code;
        reject(new Error(`${command} ${args.join(' ')} failed (${how}):\n${output}`));
      },
    );
    live.add(child);
  });
}

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Polls `ready` every `intervalMs` until it resolves true. The servers started here announce readiness on
 * no channel we can subscribe to, so asking them is the event. Rejects after `timeoutMs`, or at once when
 * `failed` (a daemon died) rejects.
 */
export async function waitUntil(
  what: string,
  ready: () => Promise<boolean>,
  options: { timeoutMs: number; intervalMs?: number; failed?: Promise<never> },
): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  const interval = options.intervalMs ?? 100;
  let abandoned = false;
  options.failed?.catch(() => {
    abandoned = true;
  });
  const poll = async () => {
    let lastError: unknown;
    while (!abandoned && Date.now() < deadline) {
      try {
        if (await ready()) return;
      } catch (err) {
        lastError = err;
      }
      await new Promise((resolve) => setTimeout(resolve, interval));
    }
    throw new Error(`${what}: not ready after ${options.timeoutMs} ms`, { cause: lastError });
  };
  await (options.failed === undefined ? poll() : Promise.race([poll(), options.failed]));
}
