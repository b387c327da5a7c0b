import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Daemon, freePort, run, startDaemon, waitUntil } from './daemon.js';
import type { RunDir } from './run-dir.js';

/** The RADOS Gateway of a single-node Ceph cluster this run started, and the S3 user it created. */
export interface CephRgw {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string;
  readonly credentials: { accessKeyId: string; secretAccessKey: string };
  /** Stops the gateway, the OSD and the monitor, in that order. Idempotent. */
  stop(): Promise<void>;
}

/** The S3 user's keys. The cluster listens on loopback only and lives for one test run. */
export const RGW_CREDENTIALS = { accessKeyId: 'test', secretAccessKey: 'test' } as const;

/** `radosgw-admin` arguments creating the S3 user with `RGW_CREDENTIALS`. */
const S3_USER = [
  'user',
  'create',
  '--uid',
  'test',
  '--display-name',
  'test-backends',
  '--access-key',
  RGW_CREDENTIALS.accessKeyId,
  '--secret',
  RGW_CREDENTIALS.secretAccessKey,
];

/**
 * The single-node configuration: no cephx, one OSD on `memstore` (RAM, nothing on disk), pools of size 1,
 * everything on 127.0.0.1, and every path under the run's directory.
 */
function cephConf(dir: string, fsid: string, monPort: number, rgwPort: number): string {
  return `[global]
fsid = ${fsid}
mon host = 127.0.0.1:${monPort}
mon initial members = a
public addr = 127.0.0.1
ms bind ipv6 = false
# With cephx off the daemons' default "secure" mode to the monitor has no method: radosgw hangs in
# AUTH_CONNECTING (-13) unless crc is allowed.
ms mon client mode = crc secure
auth cluster required = none
auth service required = none
auth client required = none
osd objectstore = memstore
osd pool default size = 1
osd pool default min size = 1
mon allow pool size one = true
mon warn on pool no redundancy = false
osd crush chooseleaf type = 0
run dir = ${dir}/run
pid file = ${dir}/run/$name.pid
admin socket = ${dir}/run/$name.asok
log file = ${dir}/log/$name.log
keyring = ${dir}/keyring

[mon]
mon data = ${dir}/mon/$cluster-$id

[osd]
osd data = ${dir}/osd/$cluster-$id
# memstore's default (1 GiB) is plenty for the tests; keep it explicit so the RAM use is known.
memstore device bytes = 1073741824

[client.rgw.a]
# Without tcp_nodelay every small response waits for Nagle: ~45 ms per GET.
rgw frontends = beast endpoint=127.0.0.1:${rgwPort} tcp_nodelay=1
rgw data = ${dir}/rgw
`;
}

/**
 * Starts a single-node Ceph cluster (monitor, one memstore OSD) and a RADOS Gateway on loopback, and creates
 * the S3 user `RGW_CREDENTIALS`. Takes ~10-15 s. Needs the Debian packages ceph-mon, ceph-osd, radosgw and
 * ceph-common (scripts/backends/ensure-packages.sh). Everything lives under `runDir`; on failure whatever
 * was started is stopped before the error propagates.
 */
export async function startCephRgw(runDir: RunDir): Promise<CephRgw> {
  const dir = join(runDir.path, 'ceph');
  for (const sub of ['run', 'log', 'mon', 'osd', 'rgw']) mkdirSync(join(dir, sub), { recursive: true });
  const conf = join(dir, 'ceph.conf');
  const [monPort, rgwPort] = [await freePort(), await freePort()];
  const fsid = randomUUID();
  writeFileSync(conf, cephConf(dir, fsid, monPort, rgwPort));
  const cwd = dir;
  // Aborted on failure, so no tool keeps waiting for a monitor that was stopped.
  const tools = new AbortController();
  const tool = (command: string, args: string[], timeoutMs = 60_000) =>
    run(command, args, { cwd, timeoutMs, signal: tools.signal });
  const ceph = (args: string[]) => tool('ceph', ['-c', conf, '--connect-timeout', '60', ...args]);

  const daemons: Daemon[] = [];
  const stop = async () => {
    // Reverse order: the OSD tells a live monitor it is going, instead of waiting for one that is gone.
    for (const daemon of daemons.splice(0).reverse()) await daemon.stop();
  };
  const start = (name: string, command: string, args: string[]) => {
    const daemon = startDaemon(name, command, ['-c', conf, '-f', ...args], {
      cwd,
      logFile: join(dir, 'log', `${name}.out`),
      runDir,
    });
    daemons.push(daemon);
    return daemon;
  };

  try {
    const keyring = join(dir, 'keyring');
    await tool('ceph-authtool', [
      '--create-keyring',
      keyring,
      '--gen-key',
      '-n',
      'mon.',
      '--cap',
      'mon',
      'allow *',
    ]);
    await tool('ceph-authtool', [keyring, '--gen-key', '-n', 'client.admin', '--cap', 'mon', 'allow *']);
    const monmap = join(dir, 'monmap');
    await tool('monmaptool', ['--create', '--add', 'a', `127.0.0.1:${monPort}`, '--fsid', fsid, monmap]);
    await tool('ceph-mon', ['-c', conf, '--mkfs', '-i', 'a', '--monmap', monmap, '--keyring', keyring]);
    const mon = start('ceph-mon', 'ceph-mon', ['-i', 'a']);

    // `ceph` waits for the monitor to answer (up to --connect-timeout), so this is also the monitor's readiness.
    const osdUuid = randomUUID();
    const osdId = (await Promise.race([ceph(['osd', 'new', osdUuid]), mon.failed])).trim();
    mkdirSync(join(dir, 'osd', `ceph-${osdId}`));
    await tool('ceph-osd', ['-c', conf, '-i', osdId, '--mkfs', '--osd-uuid', osdUuid]);
    const osd = start('ceph-osd', 'ceph-osd', ['-i', osdId]);
    const anyDied = Promise.race([mon.failed, osd.failed]);
    await waitUntil(
      'ceph-osd up',
      async () => JSON.parse(await ceph(['osd', 'stat', '-f', 'json'])).num_up_osds === 1,
      { timeoutMs: 60_000, intervalMs: 250, failed: anyDied },
    );

    const rgw = start('radosgw', 'radosgw', ['-n', 'client.rgw.a']);
    const endpoint = `http://127.0.0.1:${rgwPort}`;
    // radosgw-admin creates the gateway's pools if the gateway has not yet: either way it returns when usable.
    await Promise.race([tool('radosgw-admin', ['-c', conf, ...S3_USER], 120_000), anyDied, rgw.failed]);
    await waitUntil(
      'radosgw answering HTTP',
      async () => (await fetch(endpoint, { signal: AbortSignal.timeout(2_000) })).status < 500,
      { timeoutMs: 60_000, failed: Promise.race([anyDied, rgw.failed]) },
    );
    return { endpoint, credentials: RGW_CREDENTIALS, stop };
  } catch (err) {
    tools.abort();
    await stop();
    throw err;
  }
}
