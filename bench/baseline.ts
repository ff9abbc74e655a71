// The builds a benchmark measures side by side: the baseline ("today", the landed main named in
// bench/baseline-ref, or --baseline REF / --baseline-dir DIR) and this checkout ("after").
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../test/helpers/cli.js';

/** A build of the service to measure: this checkout ("after"), or a baseline ("today", the landed main). */
export interface Build {
  label: string;
  root: string;
}

/**
 * The baseline as of a git ref: a worktree of it next to the system's temporary files, sharing this
 * checkout's node_modules, built once (its dist/ is kept for the next run of the same commit).
 */
export function baselineBuild(ref: string): Build {
  const sha = execFileSync('git', ['rev-parse', '--short', ref], { cwd: ROOT }).toString().trim();
  const root = join(tmpdir(), `cardprogram-baseline-${sha}`);
  if (!existsSync(join(root, 'dist', 'cardprogram.js'))) {
    rmSync(root, { recursive: true, force: true });
    execFileSync('git', ['worktree', 'prune'], { cwd: ROOT });
    execFileSync('git', ['worktree', 'add', '--detach', root, sha], { cwd: ROOT, stdio: 'ignore' });
    // Some commits hold a node_modules link of their own (committed by mistake): replaced by this checkout's.
    rmSync(join(root, 'node_modules'), { force: true });
    symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'));
    execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: root, stdio: 'inherit' });
  }
  return { label: `today (${sha})`, root };
}

/**
 * The builds named by the command line: --baseline REF, else (a full run) the ref in
 * bench/baseline-ref; --quick (or --baseline none) measures this checkout alone; --baseline-dir DIR
 * a baseline built in DIR. The baseline first, then this checkout.
 */
export function buildsFromArgs(quick: boolean): Build[] {
  const argAfter = (flag: string) => {
    const at = process.argv.indexOf(flag);
    return at > 0 ? process.argv[at + 1] : undefined;
  };
  const baselineDir = argAfter('--baseline-dir');
  const baselineArg = argAfter('--baseline');
  const baselineRef =
    baselineDir !== undefined || baselineArg === 'none' || (quick && baselineArg === undefined)
      ? undefined
      : (baselineArg ?? readFileSync(new URL('./baseline-ref', import.meta.url), 'utf8').trim());
  const baseline: Build[] = baselineDir
    ? [{ label: `today (${baselineDir})`, root: baselineDir }]
    : baselineRef
      ? [baselineBuild(baselineRef)]
      : [];
  return [...baseline, { label: 'after', root: ROOT }];
}
