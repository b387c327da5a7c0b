import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { checkoutBaseline } from '../../../bench/support/baseline-worktree.js';
import { testTempDir } from '../../support/temp-dir.js';

/** A repository with two commits of `version.txt`: "one", then "two". */
function twoCommitRepo(): { repo: string; git: (...args: string[]) => string } {
  const repo = testTempDir('baseline-repo');
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], {
      cwd: repo,
      encoding: 'utf8',
    }).trim();
  git('init', '--quiet');
  for (const version of ['one', 'two']) {
    writeFileSync(join(repo, 'version.txt'), version);
    git('add', 'version.txt');
    git('commit', '--quiet', '-m', version);
  }
  return { repo, git };
}

describe('checkoutBaseline (bench:cpu against an earlier build)', () => {
  it('checks the ref out beside the tree, at its commit, and dispose removes it from disk and from git', () => {
    const { repo, git } = twoCommitRepo();
    const baseline = checkoutBaseline('HEAD~1', { repo, install: false });
    onTestFinished(() => baseline.dispose());

    expect(baseline.commit).toBe(git('rev-parse', 'HEAD~1'));
    expect(readFileSync(join(baseline.dir, 'version.txt'), 'utf8')).toBe('one');
    expect(readFileSync(join(repo, 'version.txt'), 'utf8')).toBe('two');
    expect(git('worktree', 'list')).toContain(baseline.dir);

    baseline.dispose();
    expect(existsSync(baseline.dir)).toBe(false);
    expect(git('worktree', 'list')).not.toContain(baseline.dir);
  });

  it('refuses a ref that names no commit, leaving no worktree', () => {
    const { repo, git } = twoCommitRepo();
    expect(() => checkoutBaseline('no-such-ref', { repo, install: false })).toThrow(Error);
    expect(git('worktree', 'list').split('\n')).toHaveLength(1);
  });
});
