/**
 * Where one operation's time goes: the built service under autocannon (50 connections), profiled
 * with `node --cpu-prof`, and the profile's top frames by self time, grouped by where their code
 * lives (SQLite, pg, Kysely, Fastify, Ajv, this service's src/, Node's own). The closing notes of
 * the performance issues quote this.
 *
 *   npm run bench:profile -- --op list                 SQLite, 10 s, 10,000 trades
 *   npm run bench:profile -- --op topup --db postgres  (ops: list, holder, kyc, link, topup)
 *   npm run bench:profile -- --op list --log info      the service's log level (default warn)
 *   npm run bench:profile -- --op list --root DIR      the service built in another checkout (a
 *                                                      baseline: `git worktree add DIR REF`, its
 *                                                      node_modules linked, `node scripts/build.mjs`)
 *
 * As bench:http, every request is signed with a timestamp the service requires (production's mode);
 * BENCH_TIMESTAMP=off profiles the sandbox's default (no timestamp: a read's nonce is a durable row).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { join } from 'node:path';
import { hmacSign, signingString } from '../src/http/signing.js';
import { ROOT } from '../test/helpers/cli.js';
import { arg, filledDatabase } from './filled.js';
import { drive, type Operation } from './http-drive.js';
import { operations } from './http-operations.js';
import { freePort, stop, waitReady } from './http-processes.js';

const dbName = arg('db', 'sqlite');
const opName = arg('op', 'list');
const seconds = Number(arg('seconds', '10'));
const root = arg('root', ROOT);
const TIMESTAMPED = process.env.BENCH_TIMESTAMP !== 'off';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  hitCount: number;
  children?: number[];
}

/** The bundle's source map: a frame in dist/cardprogram.js is named by the file it came from. */
const bundleMap = new SourceMap(JSON.parse(readFileSync(join(root, 'dist', 'cardprogram.js.map'), 'utf8')));

function origin(frame: Node['callFrame']): { url: string; line: number } {
  if (!frame.url.includes('/dist/cardprogram.js')) return { url: frame.url, line: frame.lineNumber + 1 };
  const entry = bundleMap.findEntry(frame.lineNumber, frame.columnNumber) as { originalSource?: string; originalLine?: number };
  return entry.originalSource
    ? { url: entry.originalSource, line: (entry.originalLine ?? 0) + 1 }
    : { url: frame.url, line: frame.lineNumber + 1 };
}

/** Which part of the program a frame's code belongs to. */
function area(url: string, fn: string): string {
  if (fn === '(garbage collector)') return 'GC';
  if (fn === '(program)' || fn === '(idle)') return fn;
  if (url === '') return fn === '' ? 'native' : `native: ${fn}`;
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1] as string;
  const src = /(?:^|\/)(src\/.*)$/.exec(url);
  return src ? (src[1] as string) : url.replace(/^file:\/\//, '');
}

const { env, dataDir, cards, demo, cleanup } = await filledDatabase(dbName, 'profile', arg('log', 'warn'), root);
const profDir = join(dataDir, 'profile');
mkdirSync(profDir, { recursive: true });
try {
  const bin = join(root, 'bin', 'cardprogram.js');
  const op = operations(cards).find((o) => o.key === opName) as Operation | undefined;
  if (!op)
    throw new Error(
      `--op must be one of ${operations(cards)
        .map((o) => o.key)
        .join(', ')}`,
    );
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, ['--cpu-prof', '--cpu-prof-dir', profDir, bin, 'serve'], {
    cwd: root,
    env: { ...env, PORT: String(port), CARDPROGRAM_REQUIRE_TIMESTAMP: TIMESTAMPED ? 'on' : 'off' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  await waitReady(base, child, started);
  const sign = (body: Record<string, unknown>, withRandomStr: boolean) => {
    const signed: Record<string, unknown> = { ...body, appId: demo.appId };
    if (withRandomStr) signed.randomStr = randomBytes(16).toString('hex');
    if (TIMESTAMPED) signed.timestamp = Date.now();
    signed.sign = hmacSign(demo.secret, signingString(signed));
    return JSON.stringify(signed);
  };
  await drive(base, op, sign, '', 2); // warm-up
  const measured = await drive(base, op, sign, '', seconds);
  await stop(child);
  const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error('no profile written');
  const profile = JSON.parse(readFileSync(join(profDir, file), 'utf8')) as { nodes: Node[]; samples: number[]; timeDeltas: number[] };
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  const areas = new Map<string, number>();
  let total = 0;
  for (const id of profile.samples) {
    const n = byId.get(id);
    if (!n) continue;
    const { functionName } = n.callFrame;
    if (functionName === '(idle)') continue;
    total += 1;
    const { url, line } = origin(n.callFrame);
    const key = `${functionName || '(anonymous)'}  ${area(url, functionName)}${url && !url.startsWith('node:') ? `:${line}` : ''}`;
    self.set(key, (self.get(key) ?? 0) + 1);
    const a = area(url, functionName);
    areas.set(a, (areas.get(a) ?? 0) + 1);
  }
  const pct = (n: number) => `${((n / total) * 100).toFixed(1)} %`;
  process.stdout.write(
    `${dbName} ${op.name}: ${measured.rps} req/s, p50 ${measured.p50} ms, p99 ${measured.p99} ms (${measured.non2xx} non-2xx)\n\n`,
  );
  process.stdout.write('Busy time by where the code lives:\n');
  for (const [a, n] of [...areas].sort((x, y) => y[1] - x[1]).slice(0, 15)) process.stdout.write(`  ${pct(n).padStart(7)}  ${a}\n`);
  process.stdout.write('\nTop frames by self time:\n');
  for (const [k, n] of [...self].sort((x, y) => y[1] - x[1]).slice(0, 25)) process.stdout.write(`  ${pct(n).padStart(7)}  ${k}\n`);
} finally {
  await cleanup();
}
