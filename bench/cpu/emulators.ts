import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const SERVE = join(import.meta.dirname, '..', '..', 'lib', 'local', 'emulators', 'serve.ts');

/** The embedded AWS stack in its own process (`npm run local`), so its CPU is counted apart. */
export interface EmulatorProcess {
  /** The variables `npm run local` prints: endpoints, credentials, bucket, queues, table. */
  readonly env: Record<string, string>;
  /** User + system CPU the emulator process has used so far, ms (`/proc/<pid>/stat`). */
  cpuMs(): number;
  stop(): void;
}

/** utime + stime of a live process, in ms (clock ticks of 10 ms on Linux). */
export function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) start at the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return ticks * 10;
}

/** Starts `lib/local/emulators/serve.ts` in a child Node process and reads its `export` lines. */
export function startEmulatorProcess(): Promise<EmulatorProcess> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', SERVE], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    const env: Record<string, string> = {};
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`emulator process exited with ${code} before it was ready`)));
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if (!out.includes('export BUCKET_NAME=')) return;
      for (const line of out.split('\n')) {
        if (!line.startsWith('export ')) continue;
        for (const pair of line.slice('export '.length).split(' ')) {
          const at = pair.indexOf('=');
          if (at > 0) env[pair.slice(0, at)] = pair.slice(at + 1);
        }
      }
      child.removeAllListeners('exit');
      const pid = child.pid as number;
      resolve({
        env,
        cpuMs: () => processCpuMs(pid),
        // The measurement is over: nothing in the emulators needs a clean shutdown.
        stop: () => {
          child.kill('SIGKILL');
        },
      });
    });
  });
}
