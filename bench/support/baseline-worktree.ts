// A build of this repository at another commit, checked out beside the working tree, so a benchmark can run
// it and this tree taking turns in one sitting and report their ratio (on a shared machine, the same command's
// CPU time moves by a third between sittings; a ratio taken in one sitting does not).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface BaselineWorktree {
  /** The ref as given (`9f776f1`, `HEAD~20`, a tag). */
  readonly ref: string;
  /** The full commit it resolved to. */
  readonly commit: string;
  /** The checkout: run commands with it as their working directory. */
  readonly dir: string;
  /** Removes the checkout and git's record of it. */
  dispose(): void;
}

export interface BaselineOptions {
  /** Run `npm ci` in the checkout (its own package-lock.json), so its scripts run on its own dependencies. @default true */
  readonly install?: boolean;
  /** The repository to check out from. @default the current working directory */
  readonly repo?: string;
}

/** Checks `ref` out into a new directory under the OS temp directory (detached, no branch). */
export function checkoutBaseline(ref: string, options: BaselineOptions = {}): BaselineWorktree {
  const repo = options.repo ?? process.cwd();
  const git = (...args: string[]) =>
    execFileSync('git', args, { cwd: repo, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  const commit = git('rev-parse', '--verify', `${ref}^{commit}`);
  const dir = join(mkdtempSync(join(tmpdir(), 's3-ingest-baseline-')), 'repo');
  const dispose = () => {
    try {
      git('worktree', 'remove', '--force', dir);
    } catch {
      // Not registered (the add failed): the directory below is all there is to remove.
    }
    rmSync(join(dir, '..'), { recursive: true, force: true });
  };
  try {
    git('worktree', 'add', '--detach', dir, commit);
    if (options.install ?? true) execFileSync('npm', ['ci', '--silent'], { cwd: dir, stdio: 'inherit' });
  } catch (error) {
    dispose();
    throw error;
  }
  return { ref, commit, dir, dispose };
}
