import { describe, expect, it } from 'vitest';
import { EXIT } from '../../../lib/cli/io.js';
import { main } from '../../../lib/cli/main.js';

async function run(args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(args, {
    stdout: { write: (t: string) => out.push(t) },
    stderr: { write: (t: string) => err.push(t), isTTY: false },
    env: {},
  });
  return { code, stdout: out.join(''), stderr: err.join('') };
}

describe('s3-ingest local --dashboard options', () => {
  it.each([
    [['--dashboard-port', '8080'], '--dashboard-port needs --dashboard'],
    [['--dashboard', '--dashboard-port', '70000'], '--dashboard-port must be at most 65535'],
    [['--dashboard', '--dashboard-port', 'eighty'], '--dashboard-port must be a non-negative integer'],
  ])('refuses %j before starting anything (usage error naming the option)', async (args, message) => {
    const result = await run(['local', ...args]);
    expect(result.code).toBe(EXIT.usage);
    expect(result.stderr).toContain(message);
    expect(result.stdout).toBe('');
  });

  it('documents --dashboard and --dashboard-port in the help', async () => {
    const result = await run(['local', '--help']);
    expect(result.code).toBe(EXIT.ok);
    expect(result.stdout).toMatch(/--dashboard {10}serve a live page on 127\.0\.0\.1/);
    expect(result.stdout).toContain('--dashboard-port N');
  });
});
