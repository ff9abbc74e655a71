import { closeSync, fchmodSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { ConfigError } from '../../config.js';
import { PRIVATE_FILE_MODE } from '../../db/files.js';
import { expireDisputes } from '../../disputes/expire.js';
import { exportDisputes, exportLine, importLineText, importOutcomes } from '../../disputes/network-file.js';
import { dateArg, print, withServices } from '../util.js';

/** `cardprogram disputes …` (docs/disputes.md): the network's dispute files, and expiry by hand. */
export function disputeCommands(program: Command): void {
  const disputes = program.command('disputes').description("disputes and chargebacks: the network's files, expiry (docs/disputes.md)");

  disputes
    .command('export')
    .description("write the day's submitted disputes for the network's dispute system: one JSON line each (PAN masked)")
    .requiredOption('--date <yyyy-mm-dd>', 'the UTC day of submission', dateArg)
    .option('--out <file>', 'write to this file instead of standard output')
    .action(async (o: { date: string; out?: string }) => {
      const lines = (await withServices((svc) => exportDisputes(svc, o.date))).map(exportLine);
      const text = lines.length ? `${lines.join('\n')}\n` : '';
      if (o.out) {
        // Explanations are personal data: the file is the owner's only, an existing one too (a
        // mode given to writeFileSync applies to a new file only). Emptied before it is narrowed.
        const fd = openSync(o.out, 'w', PRIVATE_FILE_MODE);
        try {
          fchmodSync(fd, PRIVATE_FILE_MODE);
          writeFileSync(fd, text);
        } finally {
          closeSync(fd);
        }
        console.error(`${lines.length} disputes written to ${o.out}`);
      } else process.stdout.write(text);
    });

  disputes
    .command('import <file>')
    .description(
      'post the network\'s outcomes: one JSON line each, {"disputeId","outcome":"won"|"lost","amount","decidedAt"}; prints a line per dispute (applied, duplicate, refused with the reason); importing again applies nothing twice; exit 1 when a line is refused',
    )
    .option('--json', 'print JSON')
    .action(async (file: string, o: { json?: boolean }) => {
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (err) {
        throw new ConfigError(`cannot read ${file}: ${(err as Error).message}`);
      }
      const report = await withServices((svc) => importOutcomes(svc, text));
      print(!!o.json, report, () =>
        [
          ...report.map(importLineText),
          `${report.filter((l) => l.outcome === 'applied').length} applied, ${report.filter((l) => l.outcome === 'duplicate').length} duplicate, ${report.filter((l) => l.outcome === 'refused').length} refused`,
        ].join('\n'),
      );
      if (report.some((l) => l.outcome === 'refused')) process.exitCode = 1;
    });

  disputes
    .command('expire')
    .description('expire every unsubmitted dispute past its deadline now (the service also does it hourly)')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }) => {
      const r = await withServices((svc) => expireDisputes(svc, svc.clock()));
      print(!!o.json, r, () =>
        [
          `${r.expired} disputes expired`,
          ...r.failed.map((f) => `not expired: ${f.disputeId}: ${f.error} (${f.failures} passes in a row)`),
        ].join('\n'),
      );
      if (r.failed.length > 0) process.exitCode = 1;
    });
}
