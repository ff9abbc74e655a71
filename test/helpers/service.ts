import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { ROOT } from './cli.js';
import { auditing, keepOutput } from './log-audit.js';

export interface Started {
  child: ChildProcess;
  output: () => string;
  url: string;
}

/**
 * Starts the built `cardprogram serve` as its own process on a free port and waits until it is ready.
 * `openFiles`: its open-file limit (ulimit -n), to see it under descriptor pressure.
 */
export function startService(env: Record<string, string>, { openFiles }: { openFiles?: number } = {}): Promise<Started> {
  return new Promise((resolve, reject) => {
    const command: [string, string[]] = openFiles
      ? ['/bin/sh', ['-c', `ulimit -n ${openFiles} && exec "$0" "$@"`, process.execPath, 'bin/cardprogram.js', 'serve']]
      : [process.execPath, ['bin/cardprogram.js', 'serve']];
    const child = spawn(...command, {
      cwd: ROOT,
      env: { ...process.env, PORT: '0', ...(auditing ? { LOG_LEVEL: 'trace' } : {}), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`service did not become ready:\n${out}`));
    }, 20_000);
    const onData = (d: Buffer) => {
      out += d;
      keepOutput('service', d.toString());
      const m = /"url":"(http:\/\/[^"]+)".*"msg":"cardprogram ready"/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        // Let the banner after the ready line arrive too.
        setTimeout(() => resolve({ child, output: () => out, url: m[1] as string }), 100);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => reject(new Error(`service exited with ${code}:\n${out}`)));
  });
}

export function stopped(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** Kills every child still running and waits for each to exit (before its database is dropped). */
export async function killAll(children: ChildProcess[]): Promise<void> {
  for (const c of children) {
    if (c.exitCode !== null || c.signalCode !== null) continue;
    const exited = stopped(c);
    c.kill('SIGKILL');
    await exited;
  }
}

/** A TCP port free on loopback right now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
