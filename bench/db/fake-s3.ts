import { Worker } from 'node:worker_threads';

// An HTTP server answering like S3 (PUT -> 200 with an ETag, GET -> a small JSON body), in a worker thread
// of the benchmark's own process: in-process, yet its CPU is not on the main thread the benchmark measures
// with `process.threadCpuUsage()`.
const SERVER = `
const { createServer } = require('node:http');
const { parentPort } = require('node:worker_threads');
let n = 0;
const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    n++;
    const headers = { 'x-amz-request-id': 'r' + n, 'x-amz-id-2': 'id' + n, ETag: '"' + n.toString(16).padStart(32, '0') + '"' };
    if (req.method === 'GET') {
      const body = '{"id":"x","version":1,"createdAt":"2026-01-01T00:00:00.000Z","updatedAt":"2026-01-01T00:00:00.000Z"}';
      res.writeHead(200, { ...headers, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    res.writeHead(req.method === 'DELETE' ? 204 : 200, { ...headers, 'Content-Length': '0' });
    res.end();
  });
});
// Never close an idle keep-alive socket mid-run: on a loaded machine a setup's sockets idle while the others
// write their chunks, and a request racing the server's close fails with ECONNRESET.
server.keepAliveTimeout = 0;
server.headersTimeout = 0;
server.requestTimeout = 0;
server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));
parentPort.on('message', (m) => { if (m === 'stop') server.close(() => process.exit(0)); server.closeAllConnections(); });
`;

export interface FakeS3 {
  readonly endpoint: string;
  stop(): Promise<void>;
}

export async function startFakeS3(): Promise<FakeS3> {
  const worker = new Worker(SERVER, { eval: true });
  const port = await new Promise<number>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return {
    endpoint: `http://127.0.0.1:${port}`,
    stop: async () => {
      worker.postMessage('stop');
      await new Promise((resolve) => worker.once('exit', resolve));
    },
  };
}
