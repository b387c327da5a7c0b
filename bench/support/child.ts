import { spawn } from 'node:child_process';

/** What a child benchmark process reports: its own result plus its peak resident set size. */
export interface ChildReport<T> {
  result: T;
  peakRssBytes: number;
}

const marker = '@@bench-result@@';

/**
 * Runs `script` (a TypeScript file, through tsx) in its own Node process so each engine is measured with
 * a clean heap and its own peak RSS. The child calls `reportToParent(result)` once when done.
 */
export async function runInChild<T>(
  script: string,
  args: readonly string[] = [],
  nodeArgs: readonly string[] = [],
): Promise<ChildReport<T>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', script, ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const line = stdout.split('\n').find((l) => l.startsWith(marker));
      if (code !== 0 || line === undefined) {
        reject(
          new Error(
            `benchmark child ${script} ${args.join(' ')} exited with ${code}\n${stdout.slice(-2000)}`,
          ),
        );
        return;
      }
      resolve(JSON.parse(line.slice(marker.length)) as ChildReport<T>);
    });
  });
}

/** Called in the child: prints the result and the process's peak RSS for `runInChild` to read. */
export function reportToParent<T>(result: T): void {
  const peakRssBytes = process.resourceUsage().maxRSS * 1024;
  process.stdout.write(`${marker}${JSON.stringify({ result, peakRssBytes })}\n`);
}
