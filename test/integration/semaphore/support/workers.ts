import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { WorkerConfig, WorkerMessage } from './semaphore-worker.js';

const script = fileURLToPath(new URL('./semaphore-worker.ts', import.meta.url));

export interface Worker {
  process: ChildProcess;
  /** Resolves with the next message of the given type. */
  next<T extends WorkerMessage['type']>(type: T): Promise<Extract<WorkerMessage, { type: T }>>;
  /** Resolves when the process has exited (by itself or by a signal). */
  exited: Promise<void>;
}

/** Starts a semaphore worker in its own Node process (through tsx), talking over fork IPC. */
export function startWorker(config: WorkerConfig): Worker {
  const child = fork(script, [JSON.stringify(config)], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const backlog: WorkerMessage[] = [];
  const waiting: { type: string; resolve: (m: WorkerMessage) => void; reject: (e: Error) => void }[] = [];
  child.on('message', (message: WorkerMessage) => {
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
