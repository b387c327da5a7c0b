// `npm start -- --dashboard`: the demo with the page up; the page shows the demo's records, and stays up
// after the summary until Ctrl-C, which stops it and the stack (exit 0).
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { DASHBOARD_READY } from '../../../lib/cli/local-dashboard.js';
import type { DashboardSnapshot } from '../../../lib/local/dashboard/dashboard-state.js';
import { lineOf } from '../local/dashboard/sse-snapshots.js';
import { watchOutput } from './serve-output.js';

let child: ChildProcess | undefined;
afterEach(() => {
  if (child?.exitCode === null) child.kill('SIGKILL');
});

describe('s3-ingest local --dashboard (the demo)', () => {
  it('prints the URL, shows the demo on the page, keeps it up after the summary until Ctrl-C', async () => {
    child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'lib/cli/main.ts',
        'local',
        '--dashboard',
        '--messages',
        '120',
        '--tenants',
        '2',
        '--json',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const watched = watchOutput(child);
    const started = await watched.waitFor(
      new RegExp(`^${DASHBOARD_READY} http://127\\.0\\.0\\.1:\\d+/\\n`, 'm'),
    );
    const url = new RegExp(`^${DASHBOARD_READY} (\\S+)`, 'm').exec(started)![1]!;
    const output = await watched.waitFor(/shows the run until Ctrl-C\n/);
    const summary = JSON.parse(output.split('\n').find((l) => l.startsWith('{"sent"'))!) as {
      sent: number;
      deadLettered: number;
      lost: number;
    };
    expect(summary.lost).toBe(0);
    const snapshot = (await (await fetch(`${url}api/snapshot?seconds=300`)).json()) as DashboardSnapshot;
    expect(lineOf(snapshot, 'records', 'RecordsDeadLettered')?.total).toBe(summary.deadLettered);
    expect(lineOf(snapshot, 'records', 'RecordsProcessed')?.total).toBeGreaterThanOrEqual(
      summary.sent - summary.deadLettered,
    );
    expect(lineOf(snapshot, 'invocations', 'Invocations')?.total).toBeGreaterThan(0);

    child.kill('SIGINT');
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
    await expect(fetch(url)).rejects.toMatchObject({ name: 'TypeError' });
  }, 120_000);
});
