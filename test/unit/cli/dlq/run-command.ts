import type { CliIo } from '../../../../lib/cli/io.js';

/** Runs a `dlq` subcommand in-process; `terminalAnswer` pretends stdin and stderr are a terminal typing it. */
export async function runCommand(
  command: (argv: string[], io: CliIo) => Promise<number>,
  argv: string[],
  options: { terminalAnswer?: string } = {},
) {
  const out: string[] = [];
  const err: string[] = [];
  const terminal = options.terminalAnswer !== undefined;
  const io: CliIo = {
    stdout: { write: (t: string) => out.push(t) },
    stderr: { write: (t: string) => err.push(t), isTTY: terminal },
    env: {},
    stdin: Object.assign(terminal ? [`${options.terminalAnswer}\n`] : [], { isTTY: terminal }),
  };
  const code = await command(argv, io);
  return { code, stdout: out.join(''), stderr: err.join('') };
}
