import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { cdkJsonContext } from './cdk-context.js';

// `npx cdk deploy -c env=staging` as a user types it: the CLI runs infra/app.ts with the context in
// CDK_CONTEXT_JSON. A missing deployment setting is a configuration error: one line, no stack trace.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function runApp(context: Record<string, unknown>) {
  const env: NodeJS.ProcessEnv = { ...process.env, CDK_CONTEXT_JSON: JSON.stringify(context) };
  for (const key of Object.keys(env)) if (key.startsWith('S3_INGEST_')) delete env[key];
  return spawnSync(process.execPath, ['--import', 'tsx', 'infra/app.ts'], {
    cwd: ROOT,
    env,
    encoding: 'utf8',
    timeout: 120_000,
  });
}

describe('infra/app.ts (what cdk synth and deploy run)', () => {
  it('fails staging without alarm destinations with one line naming the keys, no stack trace', () => {
    const run = runApp({ ...cdkJsonContext(), env: 'staging' });
    expect(run.status).toBe(1);
    const lines = run.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^EnvironmentConfigError: environments\.staging: set alarmEmail/);
    expect(lines[0]).toContain('S3_INGEST_ALARM_EMAIL');
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });
});
