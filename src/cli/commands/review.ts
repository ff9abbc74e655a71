import type { Command } from 'commander';
import { setCardFrozen } from '../../cards/status.js';
import { ConfigError } from '../../config.js';
import { reviewHolder } from '../../holders/review.js';
import { decideKyc } from '../../kyc/decide.js';
import { intArg, print, withServices } from '../util.js';

/** The operator's decisions: `holder review`, `card freeze|unfreeze`, `kyc review`. */
export function reviewCommands(program: Command): void {
  const holder = program.command('holder').description('cardholders');
  holder
    .command('review <holderId>')
    .description('set a cardholder audit status as a reviewer (1 under review, 2 approved, 3 rejected, 4 data to be completed)')
    .requiredOption('--status <n>', 'new audit status', intArg)
    .option('--reason <text>', 'reason shown to the merchant in errMsg')
    .option('--json', 'print JSON')
    .action(async (holderId: string, o: { status: number; reason?: string; json?: boolean }) => {
      const record = await withServices((svc) =>
        svc.database.withTx((tx) =>
          reviewHolder({
            ctx: { tx, now: svc.clock() },
            merchantId: null,
            input: { holderId, auditStatus: o.status, errMsg: o.reason, actor: 'cli' },
          }),
        ),
      );
      print(!!o.json, record, () => `${record.holderId}: auditStatus ${record.auditStatus}${record.errMsg ? ` (${record.errMsg})` : ''}`);
    });

  const card = program.command('card').description('cards');
  for (const [name, frozen] of [
    ['freeze', true],
    ['unfreeze', false],
  ] as const) {
    card
      .command(`${name} <cardId>`)
      .description(
        frozen ? 'freeze a card: authorizations decline (2724) until it is unfrozen' : 'unfreeze a card (its cardholder must be approved)',
      )
      .option('--json', 'print JSON')
      .action(async (cardId: string, o: { json?: boolean }) => {
        const model = await withServices((svc) =>
          svc.database.withTx((tx) =>
            setCardFrozen({ ctx: { tx, now: svc.clock() }, merchantId: null, input: { cardId, frozen, actor: 'operator' } }),
          ),
        );
        print(!!o.json, model, () => `${model.cardId}: ${model.status}`);
      });
  }

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
        const model = await withServices((svc) =>
          svc.database.withTx((tx) =>
            decideKyc({
              ctx: { tx, now: svc.clock() },
              box: svc.box,
              merchantId: o.merchant ?? null,
              input: { requestNo, status: chosen[0] as 'approved', reason: o.reason, actor: 'cli' },
            }),
          ),
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
