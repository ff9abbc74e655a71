import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { childDatabaseUrl, ROOT } from '../helpers/cli.js';
import { isolatedDatabase, type TestDialect } from '../helpers/db.js';
import { auditing, keepOutput } from '../helpers/log-audit.js';
import { freePort } from '../helpers/service.js';
import type { Demo } from './signed-client.js';

/**
 * A crash suite's service, started: a fresh database, the settings every suite shares (no rate
 * limit, no merchant cache, no fees: the expected balances assume none) and the suite's own, and
 * the sandbox's demo merchant. Its database's removal and the service's end go to `cleanups`.
 */
export async function crashService(dialect: TestDialect, own: Record<string, string>, cleanups: Array<() => unknown>) {
  const db = await isolatedDatabase(dialect);
  cleanups.push(() => db.cleanup());
  const port = await freePort();
  const env: Record<string, string> = {
    DATABASE_URL: childDatabaseUrl(db),
    CARDPROGRAM_DATA_DIR: db.dataDir,
    PORT: String(port),
    LOG_LEVEL: 'warn',
    CARDPROGRAM_RATE_LIMIT: '0',
    CARDPROGRAM_MERCHANT_CACHE_MS: '0',
    CARDPROGRAM_FEES: '{}',
    ...own,
  };
  const service = killableService(env);
  cleanups.push(service.kill);
  await service.start();
  const demo = JSON.parse(readFileSync(join(db.dataDir, 'demo-merchant.json'), 'utf8')) as Demo;
  return { db, port, env, demo, ...service };
}

/**
 * The service as a child process that only the harness ends, with SIGKILL: `start` resolves once it
 * is ready; any other end of it is recorded in `selfExits` (a crash of the service), and the lines
 * in which it logged a 500 are kept in `errorLog` (the latest 20).
 */
export function killableService(env: Record<string, string>) {
  let child: ChildProcess | null = null;
  const selfExits: string[] = [];
  const errorLog: string[] = [];
  const start = () =>
    new Promise<void>((resolve, reject) => {
      const c = spawn(process.execPath, ['bin/cardprogram.js', 'serve'], {
        cwd: ROOT,
        env: { ...process.env, ...env, LOG_LEVEL: auditing ? 'trace' : 'info' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child = c;
      let out = '';
      const timer = setTimeout(() => reject(new Error(`the service did not start:\n${out}`)), 30_000);
      let partial = '';
      c.stdout?.on('data', (d: Buffer) => {
        const text = d.toString();
        keepOutput('crash', text);
        // The service's own account of a 500 (src/http/errors.ts logs it as "unhandled error"; the
        // 503s of a restarting database are logged at the same level and are not kept), the
        // latest 20, whole lines even when a chunk ends mid-line.
        const lines = (partial + text).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) if (line.includes('"msg":"unhandled error"')) errorLog.push(line.slice(0, 2000));
        errorLog.splice(0, errorLog.length - 20);
        if (out.length < 100_000) out += text;
        if (out.includes('"msg":"cardprogram ready"')) {
          clearTimeout(timer);
          resolve();
        }
      });
      c.stderr?.on('data', (d: Buffer) => {
        keepOutput('crash', d.toString());
        out += d;
      });
      c.once('exit', (code, signal) => {
        clearTimeout(timer);
        if (signal !== 'SIGKILL') {
          // Only the harness kills it: any other end is a crash of the service.
          selfExits.push(`the service exited by itself (${code ?? signal}):\n${out.slice(-4000)}`);
          reject(new Error(selfExits.at(-1)));
        }
      });
    });
  const kill = async () => {
    const c = child as ChildProcess | null;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((resolve) => c.once('exit', resolve));
    c.kill('SIGKILL');
    await exited;
  };
  return { start, kill, selfExits, errorLog };
}
