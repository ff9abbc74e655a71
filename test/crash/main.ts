// `npm run crashtest`: the crash harness in full on each database (test/crash/harness.ts), then the
// network link's (test/crash/link.ts).
// CRASH_KILLS (default 25), CRASH_WRITERS (default 8), CRASH_DB (sqlite,postgres), CRASH_PG_RESTARTS
// (default 3: the PostgreSQL server itself restarted under load; 0 on a shared server);
// CRASH_SUITES (http,link), CRASH_LINK_MESSAGES (default 3 000; 10 kills, 10 connections, 100 in flight),
// CRASH_LINK_DEADLINE_MS (default 1 500, the service's default: a loaded machine answers many 91s).
import { testDialects } from '../helpers/db.js';
import { runCrashTest } from './harness.js';
import { runLinkCrashTest } from './link.js';

const kills = Number(process.env.CRASH_KILLS ?? 25);
const writers = Number(process.env.CRASH_WRITERS ?? 8);
const which = (process.env.CRASH_DB ?? 'sqlite,postgres').split(',');
const suites = (process.env.CRASH_SUITES ?? 'http,link').split(',');
const pgRestarts = Number(process.env.CRASH_PG_RESTARTS ?? 3);
const linkMessages = Number(process.env.CRASH_LINK_MESSAGES ?? 3000);
let failed = false;
const outcome = (name: string, problems: string[], good: string) => {
  if (problems.length) {
    failed = true;
    console.log(`${name}: ${problems.length} problems:\n${problems.slice(0, 50).join('\n')}`);
  } else {
    console.log(`${name}: ${good}`);
  }
};
for (const dialect of testDialects().filter((d) => which.includes(d.name))) {
  if (suites.includes('http')) {
    console.log(
      `${dialect.name}: ${kills} kills${dialect.name === 'postgres' ? ` and ${pgRestarts} restarts of PostgreSQL` : ''}, ${writers} writers`,
    );
    const report = await runCrashTest({ dialect, kills, writers, pgRestarts, upMs: [300, 2500], log: (l) => console.log(`  ${l}`) });
    console.log(JSON.stringify({ ...report, ledger: { ...report.ledger, problems: report.ledger.problems.length } }, null, 2));
    outcome(dialect.name, report.problems, 'nothing lost, nothing doubled, the books balance, every callback arrived');
  }
  if (suites.includes('link')) {
    console.log(`${dialect.name}, the network link: ${linkMessages} purchases, 10 connections, 100 in flight, 10 kills`);
    const report = await runLinkCrashTest({
      dialect,
      kills: 10,
      messages: linkMessages,
      connections: 10,
      inFlight: 100,
      cards: 50,
      deadlineMs: Number(process.env.CRASH_LINK_DEADLINE_MS ?? 1500),
      log: (l) => console.log(`  ${l}`),
    });
    console.log(JSON.stringify({ ...report, problems: report.problems.length }, null, 2));
    outcome(
      `${dialect.name}, the network link`,
      report.problems,
      'every authorization acted once, every answer the same, the books balance',
    );
  }
}
process.exit(failed ? 1 : 0);
