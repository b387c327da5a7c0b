import { request } from 'node:http';
import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { DASHBOARD_WIDGETS } from '../../../../lib/ingest/dashboard-widgets.js';
import {
  type DashboardServer,
  startDashboardServer,
} from '../../../../lib/local/dashboard/dashboard-server.js';
import { DashboardState } from '../../../../lib/local/dashboard/dashboard-state.js';

const servers: DashboardServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

async function start(withLimit = true) {
  const limits: number[] = [];
  const state = new DashboardState({ functionTimeoutMs: 8_000 });
  const server = await startDashboardServer({
    snapshot: (now, seconds) => state.snapshot(now, seconds),
    ...(withLimit ? { setS3WriteLimit: (n: number) => limits.push(n) } : {}),
    pushEveryMs: 50,
  });
  servers.push(server);
  return { server, limits, state };
}

/** One HTTP request with full control of the headers (fetch may not set Host). */
function call(
  url: string,
  options: { method?: string; path?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: options.method ?? 'GET',
        path: options.path ?? '/',
        headers: { host: `127.0.0.1:${port}`, ...options.headers },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

const json = { 'content-type': 'application/json' };

describe('the local dashboard server', () => {
  it('serves the page and its script from itself (no CDN), the widget definitions and a snapshot', async () => {
    const { server } = await start();
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const page = await call(server.url);
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.body).toContain('<script src="/dashboard.js"></script>');
    const script = await call(server.url, { path: '/dashboard.js' });
    expect(script.status).toBe(200);
    // Nothing is fetched from elsewhere: the only absolute URL is the SVG namespace.
    const external = `${page.body}${script.body}`.match(/https?:\/\/[^\s'"]+/g) ?? [];
    expect(external.filter((u) => u !== 'http://www.w3.org/2000/svg')).toEqual([]);
    expect(JSON.parse((await call(server.url, { path: '/api/widgets' })).body)).toEqual(DASHBOARD_WIDGETS);
    const snapshot = JSON.parse((await call(server.url, { path: '/api/snapshot?seconds=30' })).body);
    expect(snapshot.widgets.filter((w: { group: string }) => w.group === 'cloudwatch')).toHaveLength(
      DASHBOARD_WIDGETS.length,
    );
    const records = snapshot.widgets.find((w: { id: string }) => w.id === 'records');
    expect(records.series[0].points).toHaveLength(30);
  });

  it('streams snapshots as server-sent events', async () => {
    const { server, state } = await start();
    const res = await fetch(`${server.url}events?seconds=10`);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    state.addEmfLine(
      JSON.stringify({
        _aws: {
          Timestamp: Date.now(),
          CloudWatchMetrics: [{ Namespace: 'n', Dimensions: [], Metrics: [{ Name: 'Writes' }] }],
        },
        Writes: 7,
      }),
    );
    // The first event is sent on connect; the next ones carry what arrived since.
    while (!/"label":"Writes"[^}]*"total":7/.test(text)) text += (await reader.read()).value ?? '';
    await reader.cancel();
    expect(text.startsWith('retry: 2000\ndata: {')).toBe(true);
  });

  it('changes the S3 limit from a valid PUT', async () => {
    const { server, limits } = await start();
    const res = await call(server.url, {
      method: 'PUT',
      path: '/api/s3-limit',
      headers: json,
      body: '{"writesPerSecond": 1750}',
    });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ writesPerSecond: 1750 });
    expect(limits).toEqual([1750]);
  });

  it.each([
    ['an unknown page', { path: '/admin' }, 404],
    ['a POST to the page', { method: 'POST', path: '/' }, 405],
    ['a GET of the limit', { path: '/api/s3-limit' }, 405],
    ['a window that is not a number', { path: '/api/snapshot?seconds=abc' }, 400],
    ['a window too short', { path: '/events?seconds=5' }, 400],
    ['a window too long', { path: '/api/snapshot?seconds=100000' }, 400],
    ['a fractional window', { path: '/api/snapshot?seconds=12.5' }, 400],
    ['another Host (DNS rebinding)', { headers: { host: 'attacker.example' } }, 403],
    [
      'a limit as text',
      { method: 'PUT', path: '/api/s3-limit', headers: { 'content-type': 'text/plain' }, body: '5' },
      415,
    ],
    [
      'a limit that is not JSON',
      { method: 'PUT', path: '/api/s3-limit', headers: json, body: '{"writes' },
      400,
    ],
    [
      'a negative limit',
      { method: 'PUT', path: '/api/s3-limit', headers: json, body: '{"writesPerSecond":-1}' },
      400,
    ],
    [
      'a limit as a string',
      { method: 'PUT', path: '/api/s3-limit', headers: json, body: '{"writesPerSecond":"9"}' },
      400,
    ],
    [
      'a limit too high',
      { method: 'PUT', path: '/api/s3-limit', headers: json, body: '{"writesPerSecond":1e9}' },
      400,
    ],
    ['a JSON null', { method: 'PUT', path: '/api/s3-limit', headers: json, body: 'null' }, 400],
    [
      'a body too large',
      { method: 'PUT', path: '/api/s3-limit', headers: json, body: `{"pad":"${'x'.repeat(4_000)}"}` },
      413,
    ],
  ])('refuses %s with a 4xx and keeps serving', async (_, options, status) => {
    const { server, limits } = await start();
    const res = await call(server.url, options);
    expect(res.status).toBe(status);
    expect(res.body.length).toBeGreaterThan(0);
    expect(limits).toEqual([]);
    expect((await call(server.url, { path: '/api/snapshot' })).status).toBe(200);
  });

  it('answers 409 to a limit when the stack has no S3 model', async () => {
    const { server } = await start(false);
    const res = await call(server.url, {
      method: 'PUT',
      path: '/api/s3-limit',
      headers: json,
      body: '{"writesPerSecond":5}',
    });
    expect(res.status).toBe(409);
  });

  it('answers a malformed request with 400 and carries on', async () => {
    const { server } = await start();
    const { port } = new URL(server.url);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect({ host: '127.0.0.1', port: Number(port) }, () =>
        socket.write('NOT HTTP AT ALL\r\n\r\n'),
      );
      let text = '';
      socket.on('data', (chunk) => {
        text += chunk.toString();
      });
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect((await call(server.url)).status).toBe(200);
  });

  it('listens on loopback only', async () => {
    const { server } = await start();
    const { port } = new URL(server.url);
    const external = Object.values(networkInterfaces())
      .flat()
      .find((a) => a !== undefined && a.family === 'IPv4' && !a.internal);
    if (external === undefined) return; // a machine with loopback only has nothing else to try
    const reached = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: external.address, port: Number(port) });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    expect(reached).toBe(false);
  });
});
