// The local dashboard in a real browser (headless Chromium over the DevTools protocol) against a running
// `s3-ingest local --serve --dashboard`: messages sent to the stack show up in the page's widgets (their
// DOM values), the page's own form changes the S3 model's limit, bad requests to its endpoints leave the
// stack running, and a screenshot of the page is kept under test-results/browser/ (ignored by git).
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, writeFileSync } from 'node:fs';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD_READY } from '../../lib/cli/local-dashboard.js';
import { SERVE_READY } from '../../lib/cli/local-serve.js';
import { Producer } from '../../lib/index.js';
import { DASHBOARD_WIDGETS } from '../../lib/ingest/dashboard-widgets.js';
import { exportedEnv, watchOutput } from '../integration/cli/serve-output.js';
import { type Browser, launchChromium } from './support/chromium.js';

const SCREENSHOT_DIR = 'test-results/browser';
const TENANTS = ['acme', 'globex'];
const WRITES_PER_TENANT = 150;
const BAD_MESSAGES = 3;
const LIMIT = 100;

let stack: ChildProcess;
let browser: Browser;
let url: string;
let env: Record<string, string>;

beforeAll(async () => {
  // Batches of 50 make both tenants large enough to book their prefixes; a limit of 100 writes/s per
  // prefix makes the fleet cap pace them, so the rate graphs have something to show.
  stack = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'lib/cli/main.ts',
      'local',
      '--serve',
      '--dashboard',
      '--chaos',
      `--slowdown-rate=${LIMIT}`,
      '--batch-size=50',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const watched = watchOutput(stack);
  const banner = await watched.waitFor(new RegExp(`${SERVE_READY} \\S+\\n`));
  url = new RegExp(`^${DASHBOARD_READY} (http://127\\.0\\.0\\.1:\\d+/)$`, 'm').exec(banner)![1]!;
  env = exportedEnv(banner);
  browser = await launchChromium({ width: 1400, height: 1000 });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  if (stack?.exitCode === null) {
    stack.kill('SIGINT');
    await once(stack, 'exit');
  }
});

/** Polls `expression` in the page until `done` accepts its value; the last value if it never does. */
async function waitInPage<T>(
  expression: string,
  done: (value: T) => boolean,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await browser.evaluate<T>(expression);
  while (!done(value) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    value = await browser.evaluate<T>(expression);
  }
  return value;
}

/** A legend cell's value in the page: `widget`'s line labelled `label`, its `last` or `total` cell. */
const cell = (widget: string, label: string, column: 'last' | 'total') =>
  `(() => { const row = [...document.querySelectorAll('[data-widget="${widget}"] tr[data-series]')].find((r) => r.dataset.label === ${JSON.stringify(label)}); const v = row?.querySelector('td.${column}')?.dataset.value; return v === undefined || v === '' ? null : Number(v); })()`;

describe('the local dashboard in headless Chromium', () => {
  it('draws every CloudWatch widget of the definitions, then the local-only ones', async () => {
    await browser.open(url);
    const titles = await waitInPage<string[]>(
      `[...document.querySelectorAll('[data-group="cloudwatch"] h3')].map((h) => h.textContent)`,
      (t) => t.length > 0,
    );
    expect(titles).toEqual(DASHBOARD_WIDGETS.map((w) => w.title));
    const local = await browser.evaluate<string[]>(
      `[...document.querySelectorAll('[data-group="local"]')].map((s) => s.dataset.widget)`,
    );
    expect(local).toEqual(['local-pipeline', 'local-prefix-rates', 'local-prefix-booked']);
    const lines = await browser.evaluate<string[]>(
      `[...document.querySelectorAll('[data-widget="records"] tr[data-series]')].map((r) => r.dataset.label)`,
    );
    expect(lines).toEqual([
      'RecordsProcessed',
      'RecordsFailed',
      'RecordsDeadLettered',
      'RecordsDeferred',
      'StaleWrites',
    ]);
  });

  it('shows the messages sent: records written and rejected, S3 writes, invocations, per-prefix accepted writes', async () => {
    const sqs = new SQSClient({
      endpoint: env.AWS_ENDPOINT_URL_SQS!,
      region: env.AWS_REGION!,
      credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID!, secretAccessKey: env.AWS_SECRET_ACCESS_KEY! },
    });
    try {
      const producer = new Producer({ queueUrl: env.QUEUE_URL!, client: sqs });
      const writes = TENANTS.flatMap((tenant) =>
        Array.from({ length: WRITES_PER_TENANT }, (_, i) => ({
          tenant,
          resource: 'orders',
          op: 'upsert' as const,
          id: `o-${i}`,
          data: { total: i },
        })),
      );
      const sent = await producer.sendMany(writes);
      expect(sent.filter((s) => s.error !== undefined)).toEqual([]);
      await sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: env.QUEUE_URL!,
          Entries: Array.from({ length: BAD_MESSAGES }, (_, i) => ({
            Id: String(i),
            MessageBody: `not json ${i}`,
          })),
        }),
      );
    } finally {
      sqs.destroy();
    }
    const good = TENANTS.length * WRITES_PER_TENANT;
    expect(
      await waitInPage<number | null>(cell('records', 'RecordsProcessed', 'total'), (v) => v === good),
    ).toBe(good);
    expect(
      await waitInPage<number | null>(
        cell('records', 'RecordsDeadLettered', 'total'),
        (v) => v === BAD_MESSAGES,
      ),
    ).toBe(BAD_MESSAGES);
    expect(
      await browser.evaluate<number | null>(cell('pool-writes', 'Writes', 'total')),
    ).toBeGreaterThanOrEqual(good);
    expect(
      await browser.evaluate<number | null>(cell('invocations', 'Invocations', 'total')),
    ).toBeGreaterThanOrEqual(Math.ceil((good + BAD_MESSAGES) / 50));
    expect(await browser.evaluate<number | null>(cell('duration', 'Maximum', 'last'))).toBeGreaterThan(0);
    // The rejected messages wait in the DLQ; the ingest queue drains.
    expect(
      await waitInPage<number | null>(
        cell('local-pipeline', 'Dead letters (DLQ depth)', 'last'),
        (v) => v === BAD_MESSAGES,
      ),
    ).toBe(BAD_MESSAGES);
    expect(await waitInPage<number | null>(cell('queue-depth', 'Visible', 'last'), (v) => v === 0)).toBe(0);
    for (const tenant of TENANTS) {
      const accepted = await waitInPage<number | null>(
        cell('local-prefix-rates', `t=${tenant}/ accepted`, 'total'),
        (v) => v !== null && v >= WRITES_PER_TENANT,
      );
      expect(accepted, tenant).toBeGreaterThanOrEqual(WRITES_PER_TENANT);
      expect(
        await browser.evaluate<number | null>(cell('local-prefix-rates', `t=${tenant}/ fleet rate`, 'last')),
      ).toBeGreaterThan(0);
    }
    expect(await browser.evaluate<number | null>(cell('local-prefix-rates', 'S3 limit', 'last'))).toBe(LIMIT);
    const reasons = await browser.evaluate<string[]>(
      `[...document.querySelectorAll('[data-widget="rejected-by-reason"] tr[data-series]')].map((r) => r.dataset.label)`,
    );
    expect(reasons.length).toBeGreaterThan(0);
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
    const png = await browser.screenshot();
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    writeFileSync(`${SCREENSHOT_DIR}/dashboard.png`, png);
  }, 120_000);

  it("changes the S3 model's limit from the page's form", async () => {
    await browser.evaluate(
      `(() => { document.getElementById('limit').value = '60'; document.getElementById('limit-form').requestSubmit(); })()`,
    );
    expect(
      await waitInPage<string>(`document.getElementById('limit-result').textContent`, (t) => t !== ''),
    ).toBe('set');
    expect(
      await waitInPage<number | null>(cell('local-prefix-rates', 'S3 limit', 'last'), (v) => v === 60),
    ).toBe(60);
  });

  it('answers bad requests to its endpoints with a 4xx while the stack keeps running', async () => {
    const statuses = await browser.evaluate<number[]>(`Promise.all([
      fetch('/api/snapshot?seconds=-1').then((r) => r.status),
      fetch('/nowhere').then((r) => r.status),
      fetch('/api/s3-limit', { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{"writesPerSecond":"lots"}' }).then((r) => r.status),
      fetch('/api/s3-limit', { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: '5' }).then((r) => r.status),
      fetch('/', { method: 'DELETE' }).then((r) => r.status),
    ])`);
    expect(statuses).toEqual([400, 404, 400, 415, 405]);
    expect(stack.exitCode).toBeNull();
    const updated = await browser.evaluate<string>(`document.body.dataset.updated`);
    expect(await waitInPage<string>(`document.body.dataset.updated`, (u) => u !== updated)).not.toBe(updated);
  });
});
