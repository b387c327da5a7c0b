import type { ChildProcess } from 'node:child_process';

// What `s3-ingest local --serve` prints, as a test reads it from the child process.

/** The child's stdout so far, and a promise per pattern that resolves once the output matches it. */
export function watchOutput(proc: ChildProcess) {
  let output = '';
  const waiters: { pattern: RegExp; resolve: (o: string) => void; reject: (e: Error) => void }[] = [];
  const check = () => {
    for (const w of [...waiters]) {
      if (!w.pattern.test(output)) continue;
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(output);
    }
  };
  proc.stdout!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    check();
  });
  let stderr = '';
  proc.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  proc.once('exit', (code) => {
    for (const w of waiters.splice(0))
      w.reject(new Error(`exited with ${code} before printing ${w.pattern}:\n${output}\n${stderr}`));
  });
  return {
    output: () => output,
    waitFor: (pattern: RegExp) =>
      new Promise<string>((resolve, reject) => {
        waiters.push({ pattern, resolve, reject });
        check();
      }),
  };
}

/** `KEY=value` pairs of the printed `export` line (values single-quoted or bare). */
export function exportedEnv(output: string): Record<string, string> {
  const line = output.split('\n').find((l) => l.startsWith('export '));
  if (line === undefined) throw new Error(`no export line in:\n${output}`);
  const env: Record<string, string> = {};
  for (const [, key, quoted, bare] of line.matchAll(/(\w+)=(?:'([^']*)'|(\S+))/g))
    env[key!] = quoted ?? bare!;
  return env;
}
