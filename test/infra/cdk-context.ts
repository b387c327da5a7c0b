import { readFileSync } from 'node:fs';

/** The `context` block of the repository's cdk.json: tests build the same stacks `cdk synth` builds. */
export function cdkJsonContext(): Record<string, unknown> {
  const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as {
    context: Record<string, unknown>;
  };
  return cdkJson.context;
}
