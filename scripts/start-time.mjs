// How long the service takes to answer after it is started on an existing database: the time from
// spawning the command to the first 200 from /healthz (which answers 503 `starting` until start-up
// is complete), for `npm start` (its prestart build check included), `npx cardprogram serve` and
// `node bin/cardprogram.js serve`, each started N times in turn on one data directory made beforehand. Prints the median,
// the fastest and the slowest of each, and the service's own `readyMs` (from its log line: the
// time from its first line of code to ready, module loading excluded).
//
//   npm run start-time                 7 starts of each, SQLite in a new temporary data directory
//   npm run start-time -- --runs 15
//   DATABASE_URL=postgres://… npm run start-time     an existing PostgreSQL database
//   npm run start-time -- --root ../other-checkout   also another checkout (built), its starts
//                                                    taking turns with these: before and after
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';

const HERE = resolve(new URL('..', import.meta.url).pathname);
const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? fallback : process.argv[i + 1];
};
const RUNS = Number(arg('--runs', 7));
const ROOTS = [...process.argv.flatMap((a, i) => (a === '--root' ? [resolve(process.argv[i + 1])] : [])), HERE];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const COMMANDS = {
  'npm start': () => ['npm', ['start', '--silent']],
  'npx cardprogram serve': () => ['npx', ['--no-install', 'cardprogram', 'serve']],
  'node bin/cardprogram.js serve': (root) => [process.execPath, [join(root, 'bin', 'cardprogram.js'), 'serve']],
};

/** Starts one command in a checkout, waits for /healthz to answer 200, stops it; returns the times. */
async function once(root, name, env) {
  const [command, args] = COMMANDS[name](root);
  const port = await freePort();
  const started = performance.now();
  // Its own process group: `npm start` runs the service as a child, and both are stopped together.
  const child = spawn(command, args, {
    cwd: root,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'inherit'],
    detached: true,
  });
  let out = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let ms = null;
  try {
    for (let i = 0; i < 6000 && ms === null; i++) {
      if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}:\n${out}`);
      try {
        const res = await fetch(`http://127.0.0.1:${port}/healthz`);
        await res.arrayBuffer();
        if (res.status === 200) ms = performance.now() - started;
      } catch {}
      if (ms === null) await sleep(5);
    }
    if (ms === null) throw new Error(`${name} did not answer 200 within 30 s`);
  } finally {
    if (child.exitCode === null) process.kill(-child.pid, 'SIGTERM');
    await exited;
  }
  const ready = /"readyMs":(\d+)/.exec(out);
  return { ms, readyMs: ready ? Number(ready[1]) : null };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const dataDir = mkdtempSync(join(tmpdir(), 'cardprogram-start-'));
const env = { CARDPROGRAM_DATA_DIR: dataDir };
try {
  // The first start makes the database (migrations, keys, the demo merchant): not measured.
  // (each checkout's oldest migrations are the same: the database is made by the newest one here).
  await once(HERE, 'node bin/cardprogram.js serve', env);
  const cases = ROOTS.flatMap((root) => Object.keys(COMMANDS).map((name) => ({ root, name, runs: [] })));
  for (let i = 0; i < RUNS; i++) for (const c of cases) c.runs.push(await once(c.root, c.name, env));
  const database = process.env.DATABASE_URL?.startsWith('postgres') ? 'postgres' : 'sqlite';
  console.log(`start to first 200 from /healthz, existing ${database} database, Node.js ${process.version}, ${RUNS} starts each:`);
  for (const { root, name, runs } of cases) {
    const ms = runs.map((r) => r.ms);
    const ready = runs.map((r) => r.readyMs).filter((x) => x !== null);
    const where = ROOTS.length > 1 ? `${relative(process.cwd(), root) || '.'}: ` : '';
    console.log(
      `  ${`${where}${name}`.padEnd(ROOTS.length > 1 ? 52 : 30)} median ${Math.round(median(ms))} ms (min ${Math.round(Math.min(...ms))}, max ${Math.round(Math.max(...ms))})` +
        (ready.length ? `; readyMs median ${median(ready)}` : ''),
    );
  }
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
