import type { Command } from 'commander';
import { DomainError } from '../../errors.js';
import { checkLedger } from '../../ledger/check.js';
import { expireHolds } from '../../ledger/expire.js';
import { audited, cliOperator, print, withDatabase, withServices } from '../util.js';

/** `ledger check`: the books against their invariants (docs/operations.md); `holds expire`: hold expiry by hand. */
export function ledgerCommands(program: Command): void {
  const ledger = program.command('ledger').description('the double-entry journal behind every balance');
  ledger
    .command('check')
    .description(
      'check, in one read-only snapshot, that every journal entry balances, every card and funding balance is the replay of its journal, no card is above the cap or spent while frozen, and money is conserved; exit 1 on any problem',
    )
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }) => {
      const report = await withDatabase((database) => checkLedger(database));
      print(!!o.json, report, () =>
        [
          `${report.entries} journal entries (${report.postings} postings), ${report.cards} cards, ${report.trades} transactions checked`,
          // What cardholders owe after forced posts (decisions §12.7): accounted for, not a problem.
          ...Object.entries(report.debt).map(([currency, minor]) => `cardholders' debt (forced posts): ${minor} ${currency} minor units`),
          ...report.problems,
          report.problems.length ? `${report.problems.length} problems` : 'the books balance',
        ].join('\n'),
      );
      if (report.problems.length) throw new DomainError('internal', `ledger check found ${report.problems.length} problems`);
    });

  program
    .command('holds')
    .description('authorizations’ holds')
    .command('expire')
    .description(
      'release every authorization not cleared within its window (CARDPROGRAM_HOLD_DAYS, default 7; 31 for lodging and car rental), as the service does every hour; safe beside running instances (each is released once)',
    )
    .option('--now <iso>', 'judge the windows at this moment instead of now (e.g. 2026-12-03T00:00:00Z)')
    .option('--json', 'print JSON')
    .action(async (o: { now?: string; json?: boolean }) => {
      const now = o.now === undefined ? Date.now() : Date.parse(o.now);
      if (Number.isNaN(now)) throw new DomainError('validation', `--now: not a date and time: ${o.now}`);
      const result = await withServices((svc) =>
        expireHolds(svc, now, { actor: cliOperator(), audit: (tradeId) => audited('holds.expire', tradeId) }),
      );
      print(!!o.json, result, () =>
        [
          result.released ? `${result.released} holds released: ${result.tradeIds.join(', ')}` : 'no hold is due',
          // Each failed release was skipped (the others went on); the log has why, and the next pass tries it again.
          ...result.failed.map((f) => `not released: ${f.tradeId}: ${f.error} (${f.failures} passes in a row)`),
        ].join('\n'),
      );
      if (result.failed.length > 0) process.exitCode = 1;
    });
}
