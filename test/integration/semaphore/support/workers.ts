import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { RateWorkerConfig, RateWorkerMessage } from './rate-budget-worker.js';

const rateBudgetWorker = fileURLToPath(new URL('./rate-budget-worker.ts', import.meta.url));

/**
 * Bundles the worker (the real lib code and SDK) into one ESM file in `dir` (the test file's own, which it
 * removes), once per test file. A bundled worker starts with about 40% of the CPU of
 * `node --import tsx worker.ts`, which matters when several processes start at once on a 2-core machine.
 */
export async function bundleWorker(dir: string, source = rateBudgetWorker): Promise<string> {
  const outfile = join(dir, 'worker.mjs');
  await build({
    entryPoints: [source],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'warning',
    // The SDK's CommonJS parts call require(); give the ESM bundle one.
    banner: {
      js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
    },
  });
  return outfile;
}

export interface Worker<M extends { type: string } = RateWorkerMessage> {
  process: ChildProcess;
  /** Resolves with the next message of the given type. */
  next<T extends M['type']>(type: T): Promise<Extract<M, { type: T }>>;
  /** Resolves when the process has exited (by itself or by a signal). */
  exited: Promise<void>;
}

/**
 * Starts a worker (a bundle from `bundleWorker`) in its own Node process, talking over fork IPC. `config`
 * is the bundled worker's, `M` the messages it sends.
 */
export function startWorker<M extends { type: string } = RateWorkerMessage>(
  bundle: string,
  config: RateWorkerConfig,
): Worker<M> {
  const child = fork(bundle, [JSON.stringify(config)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const backlog: M[] = [];
  const waiting: { type: string; resolve: (m: M) => void; reject: (e: Error) => void }[] = [];
  child.on('message', (message: M) => {
    const index = waiting.findIndex((w) => w.type === message.type);
    if (index >= 0) waiting.splice(index, 1)[0]!.resolve(message);
    else backlog.push(message);
  });
  const exited = once(child, 'exit').then(([code, signal]) => {
    for (const w of waiting.splice(0)) {
      w.reject(new Error(`worker exited (code ${code}, signal ${signal}) before sending '${w.type}'`));
    }
  });
  return {
    process: child,
    exited,
    next(type) {
      const index = backlog.findIndex((m) => m.type === type);
      if (index >= 0) return Promise.resolve(backlog.splice(index, 1)[0] as never);
      if (child.exitCode !== null || child.signalCode !== null) {
        return Promise.reject(new Error(`worker already exited before sending '${type}'`));
      }
      return new Promise((resolve, reject) => waiting.push({ type, resolve: resolve as never, reject }));
    },
  };
}
