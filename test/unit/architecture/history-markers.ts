// What marks prose as a work log rather than a description of the product: commit hashes, numbered work
// sessions and issues, "before this change", "used to", the UTC windows benchmark runs were logged with, and
// a bench run told as a story ("(bench:load: 30% 503s for 5 s)", "bench:load saw"). The history is git's;
// README, docs and code describe the product as it is, dated figures live in bench/results, and the figure
// behind a tuned value in a decision record (docs/decisions).

/** One hit: where, and which rule it broke. */
export interface HistoryMarker {
  readonly file: string;
  readonly line: number;
  readonly rule: string;
  readonly text: string;
}

/**
 * Hex tokens that are real constants, not commit hashes (add one here with the file that needs it).
 * Digests (32 or 64 hex characters) are never taken for commits.
 */
export const HEX_ALLOWED = new Set<string>([]);

const RULES: readonly { readonly rule: string; readonly pattern: RegExp }[] = [
  // An abbreviated (7-12) or full (40) sha: hex with at least one digit and one letter, so words such as
  // "defaced" and numbers such as 9007199254740993 pass.
  {
    rule: 'commit hash',
    pattern: /\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])(?:[0-9a-f]{7,12}|[0-9a-f]{40})\b/g,
  },
  {
    rule: 'work session',
    pattern: /\b(?:session\s+\d+|(?:this|that|previous|last|earlier|next)\s+session)\b/gi,
  },
  // "before the fix" is left alone: runbooks tell an operator what to do before fixing a cause.
  { rule: 'before this change', pattern: /\bbefore (?:this|the) (?:change|commit|session)\b/gi },
  {
    rule: 'UTC run window',
    pattern: /\b\d{1,2}:\d{2}(?::\d{2})?(?:\s?(?:-|–|to)\s?\d{1,2}:\d{2}(?::\d{2})?)?\s?UTC\b/g,
  },
  { rule: 'dated run', pattern: /\b(?:run|ran|measured)\s+(?:of|on|at)\s+\d{4}-\d{2}-\d{2}\b/gi },
  // Name the capability, not the ticket that asked for it.
  { rule: 'issue number', pattern: /\bissues?\s+#?\d+\b/gi },
  // What the code did once; "is used to derive" passes.
  {
    rule: 'used to',
    pattern: /\bused to (?:be|hang|lose|fail|outlive|run|take|send|wait|idle|cost|drop)\b/gi,
  },
  // A bench run told as a story; a plain reference ("`npm run bench:db` measures", "(bench:db, see ...)") passes.
  {
    rule: 'bench run log',
    pattern:
      /\(bench:[a-z-]+(?: limit-bound)?(?::|, \d| after| before)|\bbench:[a-z-]+(?: limit-bound)? (?:saw|measured|ran|gave|showed)\b|\bin bench:[a-z-]+|\bbench:[a-z-]+'s (?:hot|first|cold)\b|\bmeasured why\b/gi,
  },
  {
    rule: 'work round',
    pattern: /\b(?:previous round|in this round|what changed (?:against|since|from))\b/gi,
  },
  { rule: 'review as history', pattern: /\b(?:attacker|reviewer|lead)'s review\b/gi },
  { rule: 'task brief', pattern: /\b(?:the|this) (?:issue|brief) asks\b|\bof the brief\b/gi },
];

/** Every history marker in `text` (the contents of `file`), in line order. */
export function findHistoryMarkers(file: string, text: string): HistoryMarker[] {
  const found: HistoryMarker[] = [];
  text.split('\n').forEach((content, index) => {
    for (const { rule, pattern } of RULES) {
      for (const match of content.matchAll(pattern)) {
        if (rule === 'commit hash' && HEX_ALLOWED.has(match[0])) continue;
        found.push({ file, line: index + 1, rule, text: match[0] });
      }
    }
  });
  return found;
}
