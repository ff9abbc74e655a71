// The full fuzz run (test/fuzz.test.ts): 100,000 generated requests per database unless FUZZ_RUNS
// says otherwise; FUZZ_SEED picks another sequence. `npm test` runs the same test with 300.
// Then the card network link's (test/card-network/bad-input.test.ts): 10,000 generated and mutated
// frames per database unless FUZZ_NETWORK_RUNS says otherwise (`npm test` runs 200).
// Then the 3-D Secure ACS's (test/three-ds/fuzz.test.ts): 10,000 mutated AReqs per database unless
// FUZZ_3DS_RUNS says otherwise (`npm test` runs 150).
import { spawnSync } from 'node:child_process';

const env = {
  ...process.env,
  FUZZ_RUNS: process.env.FUZZ_RUNS ?? '100000',
  FUZZ_NETWORK_RUNS: process.env.FUZZ_NETWORK_RUNS ?? '10000',
};
// The ACS's fuzz reads FUZZ_RUNS: given its own count here (each AReq is an HTTP round trip and a transaction).
const run3ds = (file) =>
  spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-timeout=0', file], {
    stdio: 'inherit',
    env: { ...env, FUZZ_RUNS: process.env.FUZZ_3DS_RUNS ?? '10000' },
  }).status ?? 1;
const run = (file) =>
  spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-timeout=0', file], { stdio: 'inherit', env }).status ?? 1;
const status = run('test/fuzz.test.ts') || run('test/card-network/bad-input.test.ts') || run3ds('test/three-ds/fuzz.test.ts');
process.exit(status);
