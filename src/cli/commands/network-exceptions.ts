import { type Command, Option } from 'commander';
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import { EXCEPTION_STATUSES } from '../../db/schema.js';
import { postException, returnException } from '../../ledger/exceptions.js';
import { type ExceptionRecord, listExceptions } from '../../ledger/exceptions-query.js';
import { runVerb } from '../../runner.js';
import { audited, operatorName, print, withDatabase, withServices } from '../util.js';

/**
 * `cardprogram network exceptions list|post|return` (decisions §12.13, docs/operations.md
 * "Exceptions"): the advices held in suspense above the forced posts' ceilings, and the operator's
 * decision on each, in the audit trail (`exception.post`, `exception.return`).
 */

const line = (e: ExceptionRecord) =>
  [
    e.exceptionId,
    e.status.padEnd(8),
    e.kind.padEnd(13),
    `${e.mti} ${e.acquirer}/${e.stan}/${e.transmitted}`,
    `${e.currency} ${e.amount}`.padStart(18),
    e.cardId,
    e.merchantId,
    e.createdAt,
    e.status === 'open' ? e.reason : `${e.decidedBy ?? ''} ${e.decidedAt ?? ''}${e.tradeId ? ` → ${e.tradeId}` : ''}`,
  ].join('  ');

/** The exception's state before a decision, for its audit record. */
const before = (id: string) => async (tx: Kysely<DB>) =>
  (await tx
    .selectFrom('network_exceptions')
    .select(['status', 'card_id', 'amount', 'currency', 'suspended'])
    .where('id', '=', id)
    .executeTakeFirst()) ?? null;

export function exceptionCommands(network: Command): void {
  const exceptions = network
    .command('exceptions')
    .description(
      'advices held in suspense above CARDPROGRAM_FORCED_POST_MAX or CARDPROGRAM_CARD_DEBT_MAX: list them, post one to its card, or return it to the network',
    );

  exceptions
    .command('list')
    .description('the exceptions queue: open ones oldest first (the default), or those of another status, newest first')
    .addOption(new Option('--status <status>', 'which').choices([...EXCEPTION_STATUSES, 'all']).default('open'))
    .option('--merchant <appId>', "only this merchant's cards")
    .option('--json', 'print JSON')
    .action(async (o: { status: (typeof EXCEPTION_STATUSES)[number] | 'all'; merchant?: string; json?: boolean }) => {
      const rows = await withDatabase((database) =>
        database.read((db) => listExceptions(db, { status: o.status, merchantId: o.merchant, limit: 1000 })),
      );
      print(!!o.json, rows, () =>
        rows.length === 0 ? `no ${o.status === 'all' ? '' : `${o.status} `}exceptions` : rows.map(line).join('\n'),
      );
    });

  const decisions = {
    post: [
      'post the held advice to its card: a forced post, into the card’s debt if need be (the ceilings are yours to pass)',
      postException,
    ],
    return: [
      'return the held advice to the network: nothing reaches the card; a clearing’s money is a line of the day’s settlement',
      returnException,
    ],
  } as const;
  for (const [name, [description, verb]] of Object.entries(decisions)) {
    exceptions
      .command(`${name} <exceptionId>`)
      .description(`${description}; once: an exception already decided is refused (2730)`)
      .option('--json', 'print JSON')
      .action(async (id: string, o: { json?: boolean }) => {
        const record = await withServices((svc) =>
          runVerb(svc, verb, {
            input: { exceptionId: id },
            actor: `cli:${operatorName()}`,
            audit: audited(`exception.${name}`, id, before(id)),
          }),
        );
        print(
          !!o.json,
          record,
          () => `${record.exceptionId}: ${record.status}${record.tradeId ? ` (${record.tradeId} on ${record.cardId})` : ''}`,
        );
      });
  }
}
