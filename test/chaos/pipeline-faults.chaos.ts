import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, it } from 'vitest';
import { formatChaosReport, runChaosPipeline } from './support/chaos-run.js';
import { expectAccounted } from './support/expect-accounted.js';

// `npm run test:chaos`: the full fault-injection run. 3,000 messages through the whole local pipeline with
// 10 % SlowDown, 1 % 500, 1 % resets and 1 % stalls on S3, and the pipeline process SIGKILLed twice; then
// 1,000 messages the same way with the rate engine.
const workDir = mkdtempSync(join(tmpdir(), 's3-ingest-chaos-full-'));
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

describe('the whole local pipeline under S3 faults and two process kills', () => {
  it('loses nothing, duplicates nothing, and keeps permits and in-flight work within their caps', async () => {
    const report = await runChaosPipeline({
      messages: 3_000,
      kills: 2,
      tenants: 4,
      seed: 7,
      workDir,
      timeoutMs: 400_000,
      progress: (line) => console.log(line),
    });
    console.log(`chaos accounting (3,000 messages, 2 kills)\n${formatChaosReport(report)}`);
    expectAccounted(report, { messages: 3_000, kills: 2 });
  });
});

describe('the same pipeline with the rate engine (FLEET_CAP=rate)', () => {
  // Two tenants, so most batches give each tenant a lease of a dozen writes or more: a lease's writes then
  // span more than the rate check's window, and a holder that did not pace would show (a run with the
  // pool's start interval disabled fails the check); more tenants make most leases a handful of writes.
  it('loses nothing, duplicates nothing, and keeps the writes accepted per prefix within the granted rates', async () => {
    const report = await runChaosPipeline({
      messages: 1_000,
      kills: 2,
      tenants: 2,
      seed: 7,
      workDir: join(workDir, 'rate'),
      timeoutMs: 400_000,
      fleetCap: 'rate',
      progress: (line) => console.log(line),
    });
    console.log(`chaos accounting, rate engine (1,000 messages, 2 kills)\n${formatChaosReport(report)}`);
    expectAccounted(report, { messages: 1_000, kills: 2 });
  });
});
