import { type Command, Option } from 'commander';
import type { Kysely } from 'kysely';
import { ConfigError } from '../../config.js';
import type { DB } from '../../db/schema.js';
import { TOKEN_STATUSES, type TokenStatus } from '../../db/schema.js';
import { runVerb } from '../../runner.js';
import { deleteToken, resumeToken, suspendToken } from '../../tokens/actions.js';
import { operatorTokens } from '../../tokens/query.js';
import type { Token } from '../../tokens/schemas.js';
import { audited, cliOperator, intArg, print, withServices } from '../util.js';

/** A token's state as the audit trail keeps it before a change: the fields the token shows after it. */
const tokenState = (tokenId: string) => async (tx: Kysely<DB>) => {
  const row = await tx.selectFrom('tokens').select(['status', 'suspended_by', 'merchant_id']).where('id', '=', tokenId).executeTakeFirst();
  return row ? { status: row.status, suspendedBy: row.suspended_by, merchantId: row.merchant_id } : null;
};

const line = (t: Token & { merchantId?: string }) =>
  [
    t.tokenId,
    t.status.padEnd(9),
    t.walletProvider.padEnd(12),
    t.cardId,
    t.merchantId ?? '',
    `${t.device.type ?? '-'}${t.device.name ? ` "${t.device.name}"` : ''}`,
    t.updatedAt,
  ]
    .filter((p) => p !== '')
    .join('  ');

/** `cardprogram tokens list|suspend|resume|delete` (decisions §15.6, docs/tokens.md): the operator's view of wallet tokens. */
export function tokenCommands(program: Command): void {
  const tokens = program
    .command('tokens')
    .description('wallet tokens (Apple Pay, Google Pay, cards on file): list, suspend, resume, delete');

  tokens
    .command('list')
    .description('tokens, newest first, any merchant’s: by merchant, card and status')
    .option('--merchant <appId>', 'only this merchant’s cards’ tokens')
    .option('--card <cardId>', 'only this card’s tokens')
    .addOption(new Option('--status <status>', 'only these').choices([...TOKEN_STATUSES]))
    .option('--limit <n>', 'how many (default 50, at most 500)', intArg)
    .option('--json', 'print JSON (each token with its history)')
    .action(async (o: { merchant?: string; card?: string; status?: TokenStatus; limit?: number; json?: boolean }) => {
      const limit = o.limit ?? 50;
      if (limit < 1 || limit > 500) throw new ConfigError('--limit must be from 1 to 500');
      const rows = await withServices((svc) =>
        svc.database.read((db) => operatorTokens(db, { merchantId: o.merchant, cardId: o.card, status: o.status, limit })),
      );
      print(!!o.json, rows, () => (rows.length ? rows.map(line).join('\n') : 'no tokens'));
    });

  const actions = {
    suspend: { verb: suspendToken, description: 'suspend a token as the operator: payments with it decline until the operator resumes it' },
    resume: { verb: resumeToken, description: 'resume a suspended token, whoever suspended it (its card must be active)' },
    delete: { verb: deleteToken, description: 'delete a token for good' },
  } as const;
  for (const [name, { verb, description }] of Object.entries(actions)) {
    tokens
      .command(`${name} <tokenId>`)
      .description(`${description}; the TSP and the merchant are told; recorded in the audit trail`)
      .option('--reason <text>', 'why (at most 200 characters): told to the TSP, kept in the token’s history')
      .option('--json', 'print JSON')
      .action(async (tokenId: string, o: { reason?: string; json?: boolean }) => {
        if (o.reason !== undefined && (o.reason.length > 200 || /\p{Cc}/u.test(o.reason))) {
          throw new ConfigError('--reason must be at most 200 characters, without control characters');
        }
        // No merchant: the operator acts on any merchant's token (source operator).
        const token = await withServices((svc) =>
          runVerb(svc, verb, {
            input: { tokenId, ...(o.reason === undefined ? {} : { reason: o.reason }) },
            actor: cliOperator(),
            audit: audited(`token.${name}`, tokenId, tokenState(tokenId)),
          }),
        );
        print(!!o.json, token, () => line(token));
      });
  }
}
