import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, it } from 'vitest';
import { formatChaosReport, runChaosPipeline } from './support/chaos-run.js';
import { expectAccounted } from './support/expect-accounted.js';

// `npm run test:chaos`: the full fault-injection run. 3,000 messages through the whole local pipeline with
// 10 % SlowDown, 1 % 500, 1 % resets and 1 % stalls on S3, and the pipeline process SIGKILLed twice.
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
