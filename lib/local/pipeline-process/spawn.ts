import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { readEventLog } from './event-log.js';
import { type PipelineProcessOptions, pipelineProcessArgs } from './options.js';

const ENTRY = fileURLToPath(new URL('./main.ts', import.meta.url));

export interface SpawnPipelineProcessOptions extends PipelineProcessOptions {
  /** The handler's environment (BUCKET_NAME, DLQ_URL, endpoints, ...), added to this process's. */
  env: Record<string, string>;
  /** Where the child's stdout and stderr go (the handler's Powertools logs). Default: discarded. */
  outputFile?: string;
}

/** A running pipeline process. */
export interface PipelineProcess {
  readonly pid: number;
  readonly logFile: string;
  /** Resolves with the exit code (or the signal's name) once the process is gone. */
  readonly exited: Promise<number | string>;
  /** Resolves once the process logged `ready` (its pollers run); rejects if it exits first or after `timeoutMs`. */
  ready(timeoutMs?: number): Promise<void>;
  /** SIGKILL: no cleanup at all, as when Lambda loses a sandbox. Resolves once the process is gone. */
  kill(): Promise<void>;
  /** SIGTERM: graceful stop (invocations settle, bookings are reported). Resolves with the exit code. */
  stop(): Promise<number | string>;
}

/** Starts `lib/local/pipeline-process/main.ts` in its own Node process (through tsx). */
export function spawnPipelineProcess(options: SpawnPipelineProcessOptions): PipelineProcess {
  const { env, outputFile, ...runner } = options;
  const output = outputFile === undefined ? 'ignore' : openSync(outputFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(process.execPath, ['--import', 'tsx', ENTRY, ...pipelineProcessArgs(runner)], {
      env: { POWERTOOLS_LOG_LEVEL: 'ERROR', ...process.env, ...env },
      stdio: ['ignore', output, output],
    });
  } finally {
    if (typeof output === 'number') closeSync(output);
  }
  if (child.pid === undefined) throw new Error('pipeline process did not start');
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1));
  });
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  return {
    pid: child.pid,
    logFile: runner.logFile,
    exited,
    async ready(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        if (readEventLog(runner.logFile).some((l) => l.event === 'ready' && l.pid === child.pid)) return;
        if (gone) throw new Error(`pipeline process ${child.pid} exited before ready (${await exited})`);
        if (Date.now() > deadline)
          throw new Error(`pipeline process ${child.pid} not ready in ${timeoutMs} ms`);
        await delay(50);
      }
    },
    async kill() {
      if (!gone) child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      if (!gone) child.kill('SIGTERM');
      return exited;
    },
  };
}
