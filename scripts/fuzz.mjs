// The full fuzz run (test/fuzz.test.ts): 100,000 generated requests per database unless FUZZ_RUNS
// says otherwise; FUZZ_SEED picks another sequence. `npm test` runs the same test with 300.
// Then the card network link's (test/network-link.bad-input.test.ts): 10,000 generated and mutated
// frames per database unless FUZZ_NETWORK_RUNS says otherwise (`npm test` runs 200).
import { spawnSync } from 'node:child_process';

const env = {
  ...process.env,
  FUZZ_RUNS: process.env.FUZZ_RUNS ?? '100000',
  FUZZ_NETWORK_RUNS: process.env.FUZZ_NETWORK_RUNS ?? '10000',
};
const run = (file) =>
  spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-timeout=0', file], { stdio: 'inherit', env }).status ?? 1;
const status = run('test/fuzz.test.ts') || run('test/network-link.bad-input.test.ts');
process.exit(status);
