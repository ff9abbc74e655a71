// Builds the SDK and the service. The SDK (client/dist/) comes first: its record types are generated
// from the service's OpenAPI document (scripts/sdk-types.ts; lint checks them), then compiled by tsc
// for its declaration files, and the service's CLI signs with it. The service is one bundled file,
// dist/cardprogram.js (esbuild), the SDK included: loading one file instead of some 900 modules is
// most of what makes `serve` start quickly. Type checking is `npm run typecheck`.
//
// With --if-stale (npm start's and npm test's pre-step) each part is built only when one of its
// inputs is newer than its last build: a check of file times, a few milliseconds, so a restart
// after a crash pays nothing for it.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// Paths below are relative to the repository, wherever this is run from.
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const at = (path) => join(ROOT, path);

const COMMON = ['tsconfig.json', 'package-lock.json', 'package.json', 'scripts/build.mjs'];
const TARGETS = [
  {
    name: 'SDK',
    stamp: 'client/dist/.build-stamp',
    // src too: the SDK's types are generated from the service's schemas.
    inputs: [
      'src',
      'client/src',
      'client/tsconfig.json',
      'client/package.json',
      'scripts/sdk-types.ts',
      'scripts/sdk-readme.ts',
      ...COMMON,
    ],
    outputs: ['client/dist/index.js', 'client/dist/index.d.ts'],
    build: buildSdk,
  },
  {
    // The Python SDK's types (sdk/python/cardprogram/_wire.py, committed): generated from the same
    // document; `npm run lint` checks them and that every operation has a Python method.
    name: 'Python SDK types',
    stamp: 'sdk/python/.build-stamp',
    inputs: ['src', 'scripts/sdk-python-types.ts', 'scripts/sdk-python-operations.ts', 'scripts/sdk-types.ts', ...COMMON],
    outputs: ['sdk/python/cardprogram/_wire.py'],
    build: buildPythonTypes,
  },
  {
    name: 'service',
    stamp: 'dist/.build-stamp',
    inputs: ['src', 'client/src', ...COMMON],
    outputs: ['dist/cardprogram.js'],
    build: buildService,
  },
];

function newest(path) {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let max = stat.mtimeMs; // a deleted or renamed file changes its folder's time
  for (const entry of readdirSync(path)) max = Math.max(max, newest(join(path, entry)));
  return max;
}

function isCurrent(target) {
  if (!existsSync(at(target.stamp)) || !target.outputs.every((p) => existsSync(at(p)))) return false;
  const built = statSync(at(target.stamp)).mtimeMs;
  return target.inputs.every((p) => newest(at(p)) <= built);
}

async function buildService() {
  const { build } = await import('esbuild');
  // What the bundle leaves to node_modules: a native addon, pg's optional native binding, and the
  // API reference's renderer, imported only when /docs is first asked for (5 MB the service never runs).
  const external = ['better-sqlite3', 'pg-native', '@scalar/fastify-api-reference'];
  // Built beside dist/ and moved in file by file (a rename replaces a file at once): a service or a
  // command started while a build runs (a test beside another that rebuilds) finds the old bundle or
  // the new one, never none.
  const next = `dist-next-${process.pid}`;
  rmSync(at(next), { recursive: true, force: true });
  await build({
    absWorkingDir: ROOT,
    entryPoints: { cardprogram: 'src/cli/index.ts' },
    outdir: next,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external,
    // Whitespace and syntax only: a third less to read and parse at every start, and function names
    // kept (stack traces, Fastify's plugin names). The source map (node --enable-source-maps) maps back to src/.
    minifyWhitespace: true,
    minifySyntax: true,
    sourcemap: 'linked',
    sourcesContent: false,
    logLevel: 'warning',
    // The bundled CommonJS packages call require() for Node's own modules and for the externals;
    // an ES module has no require of its own.
    banner: { js: "import { createRequire as __createRequire } from 'node:module';\nconst require = __createRequire(import.meta.url);" },
  });
  mkdirSync(at('dist'), { recursive: true });
  const made = readdirSync(at(next));
  for (const file of made) renameSync(at(join(next, file)), at(join('dist', file)));
  rmSync(at(next), { recursive: true, force: true });
  // What earlier versions left in dist/ (their per-file output) and this build did not make.
  for (const entry of readdirSync(at('dist'))) {
    if (!made.includes(entry) && entry !== '.build-stamp') rmSync(at(join('dist', entry)), { recursive: true, force: true });
  }
}

function buildSdk() {
  // The SDK's record types from the OpenAPI document; the file is rewritten only when it changes.
  const generated = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/sdk-types.ts'], { cwd: ROOT, stdio: 'inherit' });
  if (generated.status !== 0) process.exit(generated.status ?? 1);
  // Its README's list of callback events from the SDK's types (written only when it changes).
  const readme = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/sdk-readme.ts'], { cwd: ROOT, stdio: 'inherit' });
  if (readme.status !== 0) process.exit(readme.status ?? 1);
  // The launcher's path, not a resolved export: typescript@7 exports no ./bin/tsc.
  const tsc = join('node_modules', 'typescript', 'bin', 'tsc');
  const res = spawnSync(process.execPath, [tsc, '-p', 'client/tsconfig.json'], { cwd: ROOT, stdio: 'inherit' });
  if (res.status !== 0) process.exit(res.status ?? 1);
}

function buildPythonTypes() {
  const res = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/sdk-python-types.ts'], { cwd: ROOT, stdio: 'inherit' });
  if (res.status !== 0) process.exit(res.status ?? 1);
}

/** Builds every part, or with ifStale only those whose inputs changed since their last build. */
export async function build({ ifStale = false } = {}) {
  for (const target of TARGETS) {
    if (ifStale && isCurrent(target)) continue;
    const started = performance.now();
    await target.build();
    writeFileSync(at(target.stamp), `${new Date().toISOString()}\n`);
    if (ifStale) process.stderr.write(`built the ${target.name} in ${Math.round(performance.now() - started)} ms\n`);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await build({ ifStale: process.argv.includes('--if-stale') });
