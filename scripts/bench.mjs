// Runs every benchmark in bench/, passing on the arguments (e.g. --quick).
import { spawnSync } from 'node:child_process';

const args = process.argv.slice(2);
for (const file of ['bench/ledger.ts', 'bench/callbacks.ts', 'bench/http.ts', 'bench/network.ts', 'bench/three-ds.ts', 'bench/tokens.ts']) {
  const res = spawnSync(process.execPath, ['--import', 'tsx', file, ...args], { stdio: 'inherit', env: process.env });
  if (res.status !== 0) process.exit(res.status ?? 1);
}
