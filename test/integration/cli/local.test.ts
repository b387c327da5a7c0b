import { describe, expect, it } from 'vitest';
import type { LocalSummary } from '../../../lib/cli/local.js';
import { main } from '../../../lib/cli/main.js';

function captureIo() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    io: {
      stdout: { write: (text: string) => out.push(text) },
      stderr: { write: (text: string) => err.push(text), isTTY: false },
      env: process.env,
    },
    stdout: () => out.join(''),
    stderr: () => err.join(''),
  };
}

describe('s3-ingest local (npm start)', () => {
  it('runs the demo end to end: every message written or dead-lettered with a reason, none lost or duplicated', async () => {
    const capture = captureIo();
    // Batches of 50 over 3 tenants: each tenant has 10+ writes a batch, so it takes its prefix lease (a
    // tenant with fewer writes in a batch writes without one).
    const code = await main(
      ['local', '--messages', '200', '--tenants', '3', '--batch-size', '50', '--json'],
      capture.io,
    );
    // On failure, the summary's problems say what was lost or duplicated.
    expect(code, `${capture.stderr()}\n${capture.stdout().trim().split('\n').at(-1)}`).toBe(0);
    const lines = capture.stdout().trim().split('\n');
    const summary = JSON.parse(lines[lines.length - 1]!) as LocalSummary;
    expect(summary).toMatchObject({ sent: 200, lost: 0, duplicated: 0, problems: [] });
    expect(summary.deadLettered).toBeGreaterThan(0);
    expect(Object.values(summary.deadLetteredByReason).reduce((a, b) => a + b, 0)).toBe(summary.deadLettered);
    expect(summary.written).toBeGreaterThan(0);
    // Good messages collapse onto records (updates, deletes): records + deletions never exceed good messages.
    expect(summary.written + summary.deletedAsExpected).toBeLessThanOrEqual(
      summary.sent - summary.deadLettered,
    );
    expect(summary.invocations).toBeGreaterThan(0);
    expect(summary.bookedRatePeak).toBeGreaterThan(0);
    // Writes counts S3 write calls (every attempt), at least one per record written or deleted.
    expect(summary.writes).toBeGreaterThanOrEqual(summary.written + summary.deletedAsExpected);
    expect(summary.executionMs.p99).toBeGreaterThanOrEqual(summary.executionMs.p50);
    expect(capture.stdout()).toMatch(
      /^S3 +\d+ write calls, retries \d+, S3SlowDowns \d+, timeouts \d+, pool errors \d+/m,
    );
  }, 60_000);

  it('--fifo --producers: FIFO queues, two tenant-bound producers, the cross-tenant write refused and shown', async () => {
    const capture = captureIo();
    const code = await main(
      ['local', '--messages', '150', '--tenants', '4', '--fifo', '--producers', '--json'],
      capture.io,
    );
    expect(code, capture.stderr()).toBe(0);
    const lines = capture.stdout().trim().split('\n');
    const summary = JSON.parse(lines[lines.length - 1]!) as LocalSummary;
    // 150 demo messages plus the probe; every round went out at once and the final state is still exact.
    expect(summary).toMatchObject({ sent: 151, lost: 0, duplicated: 0, problems: [], queue: 'fifo' });
    expect(summary.producers).toEqual({
      alpha: ['tenant-00', 'tenant-01'],
      beta: ['tenant-02', 'tenant-03'],
    });
    expect(summary.crossTenantRefused).toBe(1);
    expect(summary.deadLetteredByReason['tenant-not-allowed']).toBe(1);
    expect(capture.stdout()).toMatch(/^cross-tenant {2}1 write\(s\) refused \(tenant-not-allowed\)$/m);
    expect(capture.stdout()).toMatch(/^queues {8}fifo, producers alpha \(tenant-00, tenant-01\), beta/m);
  }, 90_000);
});
