// The full fuzz run (test/fuzz.test.ts): 100,000 generated requests per database unless FUZZ_RUNS
// says otherwise; FUZZ_SEED picks another sequence. `npm test` runs the same test with 300.
import { spawnSync } from 'node:child_process';

const env = { ...process.env, FUZZ_RUNS: process.env.FUZZ_RUNS ?? '100000' };
const res = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-timeout=0', 'test/fuzz.test.ts'], { stdio: 'inherit', env });
process.exit(res.status ?? 1);
