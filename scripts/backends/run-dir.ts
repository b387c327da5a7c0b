import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onProcessExit } from './daemon.js';

/** Every run's directory is `<tmp>/s3-ingest-backends-XXXXXX`: how a later run recognises a leftover one. */
const PREFIX = 's3-ingest-backends-';
const OWNER_FILE = 'owner.pid';
const DAEMONS_FILE = 'daemons.pids';

/**
 * The one temporary directory of a `test:backends` run: configuration, data, logs and sockets of every
 * server it starts. It records the owning process and the daemons' pids, so a run that was killed before
 * its teardown (SIGKILL, a crashed runner) is cleaned up by the next one.
 */
export interface RunDir {
  readonly path: string;
  /** Records a daemon's pid (its command line must mention `path`, see `sweepLeftoverRunDirs`). */
  track(pid: number): void;
  /** Removes the directory and everything in it. Idempotent. */
  remove(): void;
}

export function createRunDir(): RunDir {
  const path = mkdtempSync(join(tmpdir(), PREFIX));
  writeFileSync(join(path, OWNER_FILE), String(process.pid));
  const removeNow = () => rmSync(path, { recursive: true, force: true });
  const forget = onProcessExit(removeNow);
  return {
    path,
    track: (pid) => appendFileSync(join(path, DAEMONS_FILE), `${pid}\n`),
    remove: () => {
      forget();
      removeNow();
    },
  };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function commandLineOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

/**
 * Kills the daemons of earlier runs whose owner is gone, and removes their directories. A pid is killed only
 * if its command line still names that run's directory, so a recycled pid is never touched. Returns the
 * number of directories removed.
 */
export function sweepLeftoverRunDirs(): number {
  let removed = 0;
  for (const entry of readdirSync(tmpdir())) {
    if (!entry.startsWith(PREFIX)) continue;
    const path = join(tmpdir(), entry);
    let owner: number;
    try {
      owner = Number(readFileSync(join(path, OWNER_FILE), 'utf8'));
    } catch {
      continue; // being created right now, or not ours
    }
    if (!Number.isInteger(owner) || owner === process.pid || isAlive(owner)) continue;
    let pids: number[] = [];
    try {
      pids = readFileSync(join(path, DAEMONS_FILE), 'utf8').split('\n').filter(Boolean).map(Number);
    } catch {
      // no daemon was started
    }
    for (const pid of pids) {
      if (Number.isInteger(pid) && pid > 0 && commandLineOf(pid).includes(path)) process.kill(pid, 'SIGKILL');
    }
    rmSync(path, { recursive: true, force: true });
    removed += 1;
  }
  return removed;
}
