import { readFileSync } from 'node:fs';

/** The `context` block of the repository's cdk.json: tests build the same stacks `cdk synth` builds. */
export function cdkJsonContext(): Record<string, unknown> {
  const cdkJson = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as {
    context: Record<string, unknown>;
  };
  return cdkJson.context;
}

/** The page and ticket addresses the tests give environments that name none (see `withAlarmSubscribers`). */
export const TEST_PAGE_EMAIL = 'oncall@example.com';
export const TEST_TICKET_EMAIL = 'team-queue@example.com';

/**
 * cdk.json's context with test alarm subscribers on every non-dev environment that sets none. The repository's
 * staging and prod blocks deliberately name no address (the team sets its own on-call), and non-dev
 * environments refuse to synthesize without one.
 */
export function withAlarmSubscribers(context: Record<string, unknown>): Record<string, unknown> {
  const environments = context.environments as Record<string, Record<string, unknown>>;
  const withSubscribers = Object.fromEntries(
    Object.entries(environments).map(([name, block]) => {
      const alarms = (block.alarms ?? {}) as Record<string, unknown>;
      const named =
        name === 'dev' || ['email', 'topicArn', 'ticketEmail', 'ticketTopicArn'].some((k) => k in alarms);
      return [
        name,
        named
          ? block
          : { ...block, alarms: { ...alarms, email: TEST_PAGE_EMAIL, ticketEmail: TEST_TICKET_EMAIL } },
      ];
    }),
  );
  return { ...context, environments: withSubscribers };
}
