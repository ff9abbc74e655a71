import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { IsolatedDatabase } from './db.js';
import { auditing, keepOutput } from './log-audit.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** DATABASE_URL for a child process that must see this test's isolated database. */
export function childDatabaseUrl(db: IsolatedDatabase): string {
  return db.pgSchema ? `${db.url}?options=${encodeURIComponent(`-c search_path=${db.pgSchema}`)}` : db.url;
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command as a separate process, collecting what it prints. */
export function run(cmd: string, args: string[], cwd: string, env: Record<string, string>): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Runs the `cardprogram` CLI from source, as a separate process. */
export async function runCli(args: string[], env: Record<string, string>): Promise<CliResult> {
  // The built command, as an operator runs it (`npm test` builds first): a third of tsx's start-up.
  // Its stdout is the command's answer (a new merchant's secret, by design); stderr has its logs and errors.
  const res = await run(process.execPath, ['bin/cardprogram.js', ...args], ROOT, { LOG_LEVEL: auditing ? 'trace' : 'warn', ...env });
  keepOutput('cli', res.stderr);
  return res;
}
