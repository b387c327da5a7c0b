import { readFileSync } from 'node:fs';

/** The `context` block of the repository's cdk.json: tests build the same stacks `cdk synth` builds. */
export function cdkJsonContext(): Record<string, unknown> {
  const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as {
    context: Record<string, unknown>;
  };
  return cdkJson.context;
}

/** The page and ticket addresses the tests give environments that name none (see `withDeploySettings`). */
export const TEST_PAGE_EMAIL = 'oncall@example.com';
export const TEST_TICKET_EMAIL = 'team-queue@example.com';
/** The runbook base URL the tests give environments that name none. */
export const TEST_RUNBOOK_BASE_URL = 'https://github.com/example/s3-ingest/blob/main';

const DESTINATION_KEYS = ['email', 'topicArn', 'ticketEmail', 'ticketTopicArn'];

/**
 * cdk.json's context with test alarm subscribers and a runbook base URL on every non-dev environment that
 * sets none. The repository's staging and prod blocks deliberately name neither (each deployment gives its
 * own, with `-c` or an environment variable), and non-dev environments refuse to synthesize without them.
 */
export function withDeploySettings(context: Record<string, unknown>): Record<string, unknown> {
  const environments = context.environments as Record<string, Record<string, unknown>>;
  const completed = Object.fromEntries(
    Object.entries(environments).map(([name, block]) => {
      if (name === 'dev') return [name, block];
      const alarms = (block.alarms ?? {}) as Record<string, unknown>;
      const named = DESTINATION_KEYS.some((k) => k in alarms);
      return [
        name,
        {
          ...block,
          runbookBaseUrl: block.runbookBaseUrl ?? TEST_RUNBOOK_BASE_URL,
          alarms: named ? alarms : { ...alarms, email: TEST_PAGE_EMAIL, ticketEmail: TEST_TICKET_EMAIL },
        },
      ];
    }),
  );
  return { ...context, environments: completed };
}
