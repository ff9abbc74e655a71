import type { Command } from 'commander';
import { listAudit } from '../../audit/trail.js';
import { ConfigError } from '../../config.js';
import { intArg, print, withDatabase } from '../util.js';

/** `audit list`: the operators' audit trail (docs/operations.md, "The audit trail"). */
export function auditCommands(program: Command): void {
  const audit = program.command('audit').description('the audit trail of every change operators made (append-only)');
  audit
    .command('list')
    .description('the changes operators made, newest first: who, from where, what, to what, before and after')
    .option('--actor <name>', 'only this operator')
    .option('--action <action>', 'only this action, e.g. merchant.update, card.freeze, holder.review')
    .option('--target <id>', 'only changes to this appId, cardId, holderId, requestNo or host')
    .option('--since <date>', 'only from this day (yyyy-MM-dd, UTC) or moment (ISO 8601) on')
    .option('--limit <n>', 'at most this many (default 100)', intArg)
    .option('--json', 'print JSON')
    .action(async (o: { actor?: string; action?: string; target?: string; since?: string; limit?: number; json?: boolean }) => {
      let since: number | undefined;
      if (o.since !== undefined) {
        since = Date.parse(o.since);
        if (!/^\d{4}-\d\d-\d\d/.test(o.since) || Number.isNaN(since))
          throw new ConfigError('--since must be a day (yyyy-MM-dd) or an ISO 8601 moment');
      }
      const entries = await withDatabase((database) =>
        database.read((db) => listAudit(db, { actor: o.actor, action: o.action, target: o.target, since, limit: o.limit })),
      );
      print(!!o.json, entries, () =>
        entries.length
          ? entries
              .map(
                (e) =>
                  `${e.at}  ${e.actor}@${e.origin} (${e.source})  ${e.action} ${e.target}${e.before === null ? '' : `\n    before ${JSON.stringify(e.before)}`}${e.after === null ? '' : `\n    after  ${JSON.stringify(e.after)}`}`,
              )
              .join('\n')
          : 'no changes recorded',
      );
    });
}
