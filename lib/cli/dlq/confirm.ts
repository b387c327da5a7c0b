import type { CliIo } from '../io.js';

/** How a destructive step is allowed: `--yes`, or a "y" typed on a terminal. */
export type Confirmation = 'confirmed' | 'declined' | 'not-interactive';

function isTerminal(stream: unknown): boolean {
  return typeof stream === 'object' && stream !== null && (stream as { isTTY?: boolean }).isTTY === true;
}

async function readLine(input: NonNullable<CliIo['stdin']>): Promise<string> {
  let text = '';
  for await (const chunk of input) {
    text += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    const newline = text.indexOf('\n');
    if (newline >= 0) return text.slice(0, newline);
  }
  return text;
}

/**
 * Asks `question` on stderr and reads the answer from stdin when both are terminals; `--yes` skips the
 * question. Anything else (a pipe, CI) is `not-interactive`: the caller refuses rather than guess.
 */
export async function confirm(io: CliIo, question: string, yes: boolean): Promise<Confirmation> {
  if (yes) return 'confirmed';
  const input = io.stdin ?? process.stdin;
  if (!isTerminal(io.stderr) || !isTerminal(input)) return 'not-interactive';
  io.stderr.write(`${question} [y/N] `);
  const answer = (await readLine(input)).trim().toLowerCase();
  return answer === 'y' || answer === 'yes' ? 'confirmed' : 'declined';
}

/** What to print when a destructive step was not confirmed. */
export function refusal(result: Exclude<Confirmation, 'confirmed'>): string {
  return result === 'declined'
    ? 'nothing changed'
    : 'refusing to delete messages without confirmation: run on a terminal, or pass --yes';
}
