import type { Command } from 'commander';
import type { Kysely } from 'kysely';
import { Value } from 'typebox/value';
import { closeCard } from '../../cards/close.js';
import { queryCard } from '../../cards/query.js';
import { setCardFrozen } from '../../cards/status.js';
import { ConfigError } from '../../config.js';
import { type Controls, ControlsSchema } from '../../controls/schemas.js';
import { updateControls } from '../../controls/update.js';
import type { DB } from '../../db/schema.js';
import { DomainError } from '../../errors.js';
import { reviewHolder } from '../../holders/review.js';
import { decideKyc } from '../../kyc/decide.js';
import { settleCardDebt } from '../../ledger/settle-debt.js';
import { runVerb } from '../../runner.js';
import { audited, cliOperator, intArg, operatorName, print, withServices } from '../util.js';

/** A card's status as the audit trail keeps it before a change: the fields of the card model after it. */
const cardState = (cardId: string) => async (tx: Kysely<DB>) => {
  const row = await tx.selectFrom('cards').select(['status', 'status_source', 'status_reason']).where('id', '=', cardId).executeTakeFirst();
  return row ? { status: row.status, statusSource: row.status_source, statusReason: row.status_reason } : null;
};

/** The operator's decisions: `holder review`, `card freeze|unfreeze|close|settle-debt|controls`, `kyc review`. */
export function reviewCommands(program: Command): void {
  const holder = program.command('holder').description('cardholders');
  holder
    .command('review <holderId>')
    .description('set a cardholder audit status as a reviewer (1 under review, 2 approved, 3 rejected, 4 data to be completed)')
    .requiredOption('--status <n>', 'new audit status', intArg)
    .option('--reason <text>', 'reason shown to the merchant in errMsg')
    .option('--json', 'print JSON')
    .action(async (holderId: string, o: { status: number; reason?: string; json?: boolean }) => {
      const input = { holderId, auditStatus: o.status, errMsg: o.reason };
      const before = async (tx: Kysely<DB>) => {
        const row = await tx.selectFrom('cardholders').select(['audit_status', 'err_msg']).where('id', '=', holderId).executeTakeFirst();
        return row ? { auditStatus: row.audit_status, errMsg: row.err_msg } : null;
      };
      const record = await withServices((svc) =>
        runVerb(svc, reviewHolder, { input, actor: cliOperator(), audit: audited('holder.review', holderId, before) }),
      );
      print(!!o.json, record, () => `${record.holderId}: auditStatus ${record.auditStatus}${record.errMsg ? ` (${record.errMsg})` : ''}`);
    });

  const card = program.command('card').description('cards');
  const actions = {
    freeze: 'freeze a card as the operator: authorizations decline (2724) until the operator unfreezes it',
    unfreeze: 'unfreeze a card, whoever froze it (its cardholder must be approved)',
    close: 'close a card for good; its available balance goes to its merchant’s funding account',
  } as const;
  for (const [name, description] of Object.entries(actions) as Array<[keyof typeof actions, string]>) {
    card
      .command(`${name} <cardId>`)
      .description(description)
      .option('--reason <text>', 'why (at most 200 characters), sent to the merchant in the card.status callback')
      .option('--json', 'print JSON')
      .action(async (cardId: string, o: { reason?: string; json?: boolean }) => {
        if (o.reason !== undefined && (o.reason.length > 200 || /\p{Cc}/u.test(o.reason))) {
          throw new ConfigError('--reason must be at most 200 characters, without control characters');
        }
        // The operator is the source: its freeze outranks the merchant's and the cardholder's.
        const input = { cardId, source: 'operator' as const, reason: o.reason };
        const model = await withServices((svc) =>
          name === 'close'
            ? runVerb(svc, closeCard, { input, actor: cliOperator(), audit: audited('card.close', cardId, cardState(cardId)) })
            : runVerb(svc, setCardFrozen, {
                input: { ...input, frozen: name === 'freeze' },
                actor: cliOperator(),
                audit: audited(`card.${name}`, cardId, cardState(cardId)),
              }),
        );
        print(
          !!o.json,
          model,
          () =>
            `${model.cardId}: ${model.status}${model.statusSource ? ` (by the ${model.statusSource}${model.statusReason ? `: ${model.statusReason}` : ''})` : ''}`,
        );
      });
  }

  card
    .command('settle-debt <cardId>')
    .description(
      "settle a closed card's debt (forced posts of the card network beyond its balance) from its merchant's funding: a line of the funding statement; refused (2726) when the funding is short, nothing moved",
    )
    .option('--json', 'print JSON')
    .action(async (cardId: string, o: { json?: boolean }) => {
      const debtBefore = async (tx: Kysely<DB>) =>
        (await tx.selectFrom('cards').select(['status', 'debt', 'currency', 'merchant_id']).where('id', '=', cardId).executeTakeFirst()) ??
        null;
      const done = await withServices((svc) =>
        runVerb(svc, settleCardDebt, {
          input: { cardId },
          actor: `cli:${operatorName()}`,
          audit: audited('card.settleDebt', cardId, debtBefore),
        }),
      );
      print(
        !!o.json,
        done,
        () =>
          `${done.cardId}: debt of ${done.amount} ${done.currency} settled from ${done.merchantId}'s funding (${done.settlementId}); funding balance ${done.fundingBalance} ${done.currency}`,
      );
    });

  card
    .command('controls <cardId>')
    .description('show a card’s spending controls and what its limits have left; --set replaces them (as cardControlsUpdate)')
    .option('--set <json>', 'the controls, as JSON: e.g. \'{"spendingLimits":[{"amount":200,"interval":"daily"}]}\'; {} removes them')
    .option('--json', 'print JSON')
    .action(async (cardId: string, o: { set?: string; json?: boolean }) => {
      let controls: Controls | undefined;
      if (o.set !== undefined) {
        try {
          controls = JSON.parse(o.set) as Controls;
        } catch {
          throw new ConfigError('--set must be JSON, e.g. \'{"channels":["ecommerce"]}\'');
        }
        if (!Value.Check(ControlsSchema, controls)) {
          const first = [...Value.Errors(ControlsSchema, controls)][0];
          throw new ConfigError(`--set: ${first ? `${first.instancePath || 'controls'} ${first.message}` : 'not valid controls'}`);
        }
      }
      const shown = await withServices(async (svc) => {
        // The operator acts on any merchant's card, as that merchant's program.
        const { merchant_id: merchantId } = await svc.database.read((db) =>
          db
            .selectFrom('cards')
            .select('merchant_id')
            .where('id', '=', cardId)
            .executeTakeFirstOrThrow(() => new DomainError('cardNotFound')),
        );
        if (controls) {
          await runVerb(svc, updateControls, {
            input: { cardId, controls },
            merchantId,
            actor: cliOperator(),
            audit: audited('card.controls', cardId, async (tx) => {
              const row = await tx.selectFrom('cards').select(['holder_id', 'controls']).where('id', '=', cardId).executeTakeFirst();
              return row ? { cardId, holderId: row.holder_id, controls: row.controls ? JSON.parse(row.controls) : {} } : null;
            }),
          });
        }
        return svc.database.read((db) => queryCard(db, merchantId, cardId, svc.clock()));
      });
      const model = { cardId: shown.cardId, controls: shown.controls, spending: shown.spending };
      print(!!o.json, model, () =>
        [
          `${model.cardId}: controls ${JSON.stringify(model.controls)}`,
          ...model.spending.map(
            (l) =>
              `  ${l.interval} limit ${l.amount} (${l.source}${l.mccs ? `, categories ${l.mccs.join(',')}` : ''}): spent ${l.spent}, ${l.remaining} left`,
          ),
        ].join('\n'),
      );
    });

  const kyc = program.command('kyc').description('KYC share requests');
  kyc
    .command('review <requestNo>')
    .description('decide a KYC request as a reviewer (approving makes the e-mail’s cardholder approved)')
    .option('--approve', 'approve it')
    .option('--reject', 'reject it')
    .option('--reviewing', 'mark it as under review')
    .option('--reason <text>', 'reason sent to the merchant')
    .option('--merchant <appId>', 'the merchant, when several have this requestNo')
    .option('--json', 'print JSON')
    .action(
      async (
        requestNo: string,
        o: { approve?: boolean; reject?: boolean; reviewing?: boolean; reason?: string; merchant?: string; json?: boolean },
      ) => {
        const chosen = [o.approve && 'approved', o.reject && 'rejected', o.reviewing && 'reviewing'].filter(Boolean) as Array<
          'approved' | 'rejected' | 'reviewing'
        >;
        if (chosen.length !== 1) throw new ConfigError('say exactly one of --approve, --reject, --reviewing');
        const input = { requestNo, status: chosen[0] as 'approved', reason: o.reason };
        // --merchant scopes the decision to that merchant's request, as a merchant's own would be.
        const model = await withServices((svc) =>
          runVerb(svc, decideKyc, {
            input,
            actor: cliOperator(),
            audit: audited('kyc.review', requestNo),
            ...(o.merchant === undefined ? {} : { merchantId: o.merchant }),
          }),
        );
        print(
          !!o.json,
          model,
          () =>
            `${model.requestNo}: ${model.kycStatus}${model.reason ? ` (${model.reason})` : ''}${model.holderId ? `, cardholder ${model.holderId}` : ''}`,
        );
      },
    );
}
