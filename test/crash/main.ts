// `npm run crashtest`: the crash harness in full on each database (test/crash/harness.ts).
// CRASH_KILLS (default 25), CRASH_WRITERS (default 8), CRASH_DB (sqlite,postgres), CRASH_PG_RESTARTS
// (default 3: the PostgreSQL server itself restarted under load; 0 on a shared server).
import { testDialects } from '../helpers/db.js';
import { runCrashTest } from './harness.js';

const kills = Number(process.env.CRASH_KILLS ?? 25);
const writers = Number(process.env.CRASH_WRITERS ?? 8);
const which = (process.env.CRASH_DB ?? 'sqlite,postgres').split(',');
const pgRestarts = Number(process.env.CRASH_PG_RESTARTS ?? 3);
let failed = false;
for (const dialect of testDialects().filter((d) => which.includes(d.name))) {
  console.log(
    `${dialect.name}: ${kills} kills${dialect.name === 'postgres' ? ` and ${pgRestarts} restarts of PostgreSQL` : ''}, ${writers} writers`,
  );
  const report = await runCrashTest({ dialect, kills, writers, pgRestarts, upMs: [300, 2500], log: (l) => console.log(`  ${l}`) });
  console.log(JSON.stringify({ ...report, ledger: { ...report.ledger, problems: report.ledger.problems.length } }, null, 2));
  if (report.problems.length) {
    failed = true;
    console.log(`${dialect.name}: ${report.problems.length} problems:\n${report.problems.slice(0, 50).join('\n')}`);
  } else {
    console.log(`${dialect.name}: nothing lost, nothing doubled, the books balance, every callback arrived`);
  }
}
process.exit(failed ? 1 : 0);
