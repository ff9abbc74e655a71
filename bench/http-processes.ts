// The processes the HTTP benchmark runs: the service as in production, and the bare node:http ceiling.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { ROOT } from '../test/helpers/cli.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Peak resident memory of a process, from /proc (Linux), in MB. */
export function peakRssMb(pid: number | undefined): number | null {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : null;
  } catch {
    return null;
  }
}

// Start-up is measured, not bounded here: on a loaded machine (CI with other work on both cores) a
// first start that migrates a new PostgreSQL schema has taken more than the 2-4 s a loop count gave.
const READY_DEADLINE_MS = 60_000;

export async function waitReady(base: string, child: ChildProcess, started: number): Promise<number> {
  while (performance.now() - started < READY_DEADLINE_MS) {
    if (child.exitCode !== null) throw new Error(`service exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${base}/healthz`)).ok) return Math.round(performance.now() - started);
    } catch {}
    await sleep(5);
  }
  throw new Error(`service did not become ready within ${READY_DEADLINE_MS / 1000} s`);
}

/**
 * A loopback port free now, for a listener the benchmark starts. Below Linux's ephemeral range
 * (32768-60999): a port picked inside it can be taken by one of the machine's outgoing connections
 * (to PostgreSQL, to the service) between the pick and the service's listen, as CI saw once
 * ("port 33482 is already in use"). Tried with a listen of its own before it is given.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * 12000);
    const free = await new Promise<boolean>((resolve) => {
      const probe = createServer();
      probe.once('error', () => resolve(false));
      probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

/** The built service of a checkout (this one unless `root` names another, e.g. the baseline's). */
export async function startService(env: Record<string, string>, root = ROOT, nodeArgs: string[] = []) {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, [...nodeArgs, join(root, 'bin', 'cardprogram.js'), 'serve'], {
    cwd: root,
    env: { ...process.env, ...env, PORT: String(port), LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  const readyMs = await waitReady(base, child, started);
  return { child, base, readyMs };
}

export async function startCeiling(): Promise<{ child: ChildProcess; base: string }> {
  const child = spawn(process.execPath, [join(ROOT, 'bench', 'ceiling.mjs')], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout?.once('data', (d) => resolve(JSON.parse(String(d)).port));
    child.once('exit', () => reject(new Error('ceiling server exited')));
  });
  return { child, base: `http://127.0.0.1:${port}` };
}

export const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
