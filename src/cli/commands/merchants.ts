import { readFileSync } from 'node:fs';
import { type Command, Option } from 'commander';
import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.js';
import { addDomain, listDomains, normalizeHost, removeDomain } from '../../domains/store.js';
import { DomainError } from '../../errors.js';
import { fundingBalances, fundMerchant, repeatRefusal } from '../../ledger/funding.js';
import { createMerchant, SIGN_TYPES, type SignType } from '../../merchants/create.js';
import { listMerchants, merchantSummary, updateMerchant } from '../../merchants/manage.js';
import { rollCredentials } from '../../merchants/roll.js';
import { runVerb } from '../../runner.js';
import { audited, cliOperator, intArg, onOff, operatorName, print, rateLimitArg, withServices } from '../util.js';

/** A merchant's settings as the audit trail keeps them before a change (no secret among them). */
const merchantState = (appId: string) => async (tx: Kysely<DB>) => (await merchantSummary(tx, appId)) ?? null;

/** `merchant create|list|update|roll|fund|balance` and `domain add|list|remove`. */
export function merchantCommands(program: Command): void {
  const merchant = program.command('merchant').description('manage merchants');
  merchant
    .command('create')
    .description('create a merchant and print its credentials (the secret is shown only once)')
    .requiredOption('--name <name>', 'merchant name')
    .addOption(new Option('--sign-type <type>', 'signature algorithm').choices(SIGN_TYPES).default('HMAC-SHA256'))
    .option('--public-key <file>', 'PEM file of the RSA public key (RSA-SHA256)')
    .option('--login-free', 'enable the login-free page')
    .option('--notify-url <url>', 'where holder.audit, trade and card.status callbacks go')
    .option('--domain <host>', 'map a host of the merchant for its card page (add its certificate with `domain add`)')
    .option('--json', 'print JSON')
    .action(
      async (o: {
        name: string;
        signType: SignType;
        publicKey?: string;
        loginFree?: boolean;
        notifyUrl?: string;
        domain?: string;
        json?: boolean;
      }) => {
        const publicKeyPem = o.publicKey ? readFileSync(o.publicKey, 'utf8') : undefined;
        if (o.domain !== undefined) normalizeHost(o.domain); // a malformed host stops before anything is created
        const created = await withServices(
          async (svc) => {
            const input = { name: o.name, signType: o.signType, publicKeyPem, loginFree: o.loginFree, notifyUrl: o.notifyUrl };
            const made = await runVerb(svc, createMerchant, { input, actor: cliOperator(), audit: audited('merchant.create', input.name) });
            if (o.domain === undefined) return made;
            try {
              await runVerb(svc, addDomain, {
                input: { appId: made.appId, host: o.domain },
                actor: cliOperator(),
                audit: audited('domain.add', o.domain),
              });
            } catch (err) {
              // The merchant exists already: say so, with its credentials, rather than lose them.
              process.stderr.write(`cardprogram: merchant ${made.appId} created, but its domain was not: ${(err as Error).message}\n`);
              process.exitCode = 1;
            }
            return made;
          },
          { create: true },
        );
        print(!!o.json, created, () =>
          [
            `appId:         ${created.appId}`,
            ...(created.secret ? [`secret:        ${created.secret}`] : []),
            `webhookSecret: ${created.webhookSecret}`,
          ].join('\n'),
        );
      },
    );
  merchant
    .command('list')
    .description('list merchants (never their secrets)')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }) => {
      const all = await withServices((svc) => svc.database.read((db) => listMerchants(db)));
      print(!!o.json, all, () =>
        all.length
          ? all
              .map(
                (m) =>
                  `${m.appId}  ${m.status.padEnd(8)} ${m.signType.padEnd(11)} login-free:${m.loginFree ? 'on ' : 'off'}  rate:${m.rateLimit === null ? 'default' : `${m.rateLimit}/s`}  ${m.name}`,
              )
              .join('\n')
          : 'no merchants',
      );
    });
  merchant
    .command('update <appId>')
    .description("change a merchant's settings")
    .option('--login-free <on|off>', 'enable or disable the login-free page', onOff)
    .option('--notify-url <url>', 'callback URL for holder.audit, trade and card.status events ("none" removes it)')
    .addOption(new Option('--status <status>', 'enable or disable the merchant').choices(['active', 'disabled']))
    .option(
      '--rate-limit <n|default>',
      'requests a second this merchant may send, bursts of twice that ("default": CARDPROGRAM_RATE_LIMIT)',
      rateLimitArg,
    )
    .option(
      '--authorization-url <url>',
      'real-time authorization endpoint: each authorization the program approves is sent there for the merchant’s decision ("none" removes it)',
    )
    .option('--authorization-timeout <ms>', 'how long the endpoint may take to answer, 100 to 5000 ms (default 2000)', intArg)
    .addOption(
      new Option('--authorization-default <decision>', 'what applies when the endpoint does not answer in time or readably').choices([
        'approve',
        'decline',
      ]),
    )
    .option(
      '--dispute-provisional-credit <on|off>',
      'credit the card at once when a dispute is submitted, from the merchant’s funding account (docs/disputes.md)',
      onOff,
    )
    .option('--json', 'print JSON')
    .action(
      async (
        appId: string,
        o: {
          loginFree?: boolean;
          disputeProvisionalCredit?: boolean;
          notifyUrl?: string;
          status?: 'active' | 'disabled';
          rateLimit?: number | 'default';
          authorizationUrl?: string;
          authorizationTimeout?: number;
          authorizationDefault?: 'approve' | 'decline';
          json?: boolean;
        },
      ) => {
        const input = {
          appId,
          loginFree: o.loginFree,
          status: o.status,
          notifyUrl: o.notifyUrl === undefined ? undefined : o.notifyUrl === 'none' ? null : o.notifyUrl,
          rateLimit: o.rateLimit === 'default' ? null : o.rateLimit,
          authorizationUrl: o.authorizationUrl === undefined ? undefined : o.authorizationUrl === 'none' ? null : o.authorizationUrl,
          authorizationTimeoutMs: o.authorizationTimeout,
          authorizationDefault: o.authorizationDefault,
          disputeProvisionalCredit: o.disputeProvisionalCredit,
        };
        const updated = await withServices((svc) =>
          runVerb(svc, updateMerchant, { input, actor: cliOperator(), audit: audited('merchant.update', appId, merchantState(appId)) }),
        );
        print(
          !!o.json,
          updated,
          () =>
            `${updated.appId} updated: status ${updated.status}, login-free ${updated.loginFree ? 'on' : 'off'}, notify URL ${updated.notifyUrl ?? 'none'}, rate limit ${updated.rateLimit === null ? 'default' : `${updated.rateLimit}/s`}, authorization endpoint ${updated.authorizationUrl ? `${updated.authorizationUrl} (${updated.authorizationTimeoutMs} ms, default ${updated.authorizationDefault})` : 'none'}, dispute provisional credit ${updated.disputeProvisionalCredit ? 'on' : 'off'}`,
        );
      },
    );
  merchant
    .command('roll <appId>')
    .description(
      "replace a merchant's signing secret (or RSA public key) at once, e.g. after a leak: the old one is refused within the merchant cache bound (5 s) on every instance",
    )
    .option('--public-key <file>', 'PEM file of the new RSA public key (RSA-SHA256 merchants)')
    .option('--webhook-secret', 'also replace the webhook secret that signs callbacks')
    .option('--json', 'print JSON')
    .action(async (appId: string, o: { publicKey?: string; webhookSecret?: boolean; json?: boolean }) => {
      const publicKeyPem = o.publicKey ? readFileSync(o.publicKey, 'utf8') : undefined;
      const input = { appId, publicKeyPem, webhookSecret: o.webhookSecret };
      const rolled = await withServices((svc) =>
        runVerb(svc, rollCredentials, { input, actor: cliOperator(), audit: audited('merchant.roll', appId) }),
      );
      print(!!o.json, rolled, () =>
        [
          `${rolled.appId}: ${rolled.secret ? `new secret ${rolled.secret}` : 'new public key registered'}`,
          ...(rolled.webhookSecret ? [`new webhook secret ${rolled.webhookSecret}`] : []),
          'shown once: give them to the merchant over a secure channel',
        ].join('\n'),
      );
    });
  merchant
    .command('fund <appId> <amount>')
    .description(
      "credit a merchant's funding account, from which its top-ups are drawn (a negative amount debits it, down to zero; put it after --)",
    )
    .addOption(new Option('--currency <currency>', 'the funding account').choices(['EUR', 'USDT']).makeOptionMandatory())
    .requiredOption('--reference <text>', 'what the money is: a bank transfer reference, a contract')
    .option('--actor <name>', 'who is crediting (default: the operating-system user)')
    .option('--idempotency-key <key>', 'names this one transfer: a second run with the key credits nothing and prints the first credit')
    .option('--again', 'credit even if a credit of the same amount and reference was made in the last 24 hours')
    .option('--json', 'print JSON')
    .action(
      async (
        appId: string,
        amount: string,
        o: { currency: string; reference: string; actor?: string; idempotencyKey?: string; again?: boolean; json?: boolean },
      ) => {
        const input = {
          appId,
          amount,
          currency: o.currency,
          reference: o.reference,
          idempotencyKey: o.idempotencyKey,
          refuseRepeat: !o.again,
        };
        // The funding record keeps who credited: --actor, else the operating-system user. A refused
        // repeat is in the audit trail too (outcome "refused"), then reported as an error.
        const credit = await withServices((svc) =>
          runVerb(svc, fundMerchant, { input, actor: o.actor ?? operatorName(), audit: audited('merchant.fund', appId) }),
        );
        if (credit.outcome === 'refused') throw new DomainError('duplicateRequest', repeatRefusal(credit));
        print(
          !!o.json,
          credit,
          () =>
            `${credit.outcome === 'replayed' ? `already credited with this idempotency key (${credit.creditId}): ` : ''}${credit.appId}: ${credit.amount} ${credit.currency} (${credit.reference}); funding balance ${credit.balance} ${credit.currency}`,
        );
      },
    );
  merchant
    .command('balance <appId>')
    .description("a merchant's funding balances, per currency")
    .option('--json', 'print JSON')
    .action(async (appId: string, o: { json?: boolean }) => {
      const balances = await withServices(async (svc) => {
        const m = await svc.database.read((db) => db.selectFrom('merchants').select('id').where('id', '=', appId).executeTakeFirst());
        if (!m) throw new DomainError('merchantNotFound', `appId: no merchant ${appId}`);
        return svc.database.read((db) => fundingBalances(db, m.id));
      });
      print(!!o.json, { appId, balances }, () =>
        balances.map((b) => `${b.currency} ${b.available}${b.cardDebt > 0 ? ` (its cards owe ${b.cardDebt})` : ''}`).join('\n'),
      );
    });

  const domain = program.command('domain').description("merchants' own host names for the card page, and their certificates");
  domain
    .command('add')
    .description(
      'map a host to a merchant: its page links use https://HOST; with --cert and --key the service serves HTTPS for it (HTTPS_PORT, by SNI)',
    )
    .requiredOption('--merchant <appId>', 'the merchant')
    .requiredOption('--host <host>', 'host name, e.g. cards.example.com')
    .option('--cert <file>', 'PEM certificate (chain) naming the host')
    .option('--key <file>', 'PEM private key of the certificate')
    .option('--json', 'print JSON')
    .action(async (o: { merchant: string; host: string; cert?: string; key?: string; json?: boolean }) => {
      const certPem = o.cert === undefined ? undefined : readFileSync(o.cert, 'utf8');
      const keyPem = o.key === undefined ? undefined : readFileSync(o.key, 'utf8');
      const input = {
        appId: o.merchant,
        host: o.host,
        ...(certPem === undefined ? {} : { certPem }),
        ...(keyPem === undefined ? {} : { keyPem }),
      };
      const added = await withServices((svc) =>
        runVerb(svc, addDomain, { input, actor: cliOperator(), audit: audited('domain.add', input.host) }),
      );
      print(
        !!o.json,
        added,
        () =>
          `${added.host} → ${added.appId}${added.tls ? `, certificate valid until ${added.certExpiresAt}` : ', TLS ended in front of the service'}`,
      );
    });
  domain
    .command('list')
    .description('list mapped hosts (never their keys)')
    .option('--merchant <appId>', 'only this merchant’s')
    .option('--json', 'print JSON')
    .action(async (o: { merchant?: string; json?: boolean }) => {
      const all = await withServices((svc) => svc.database.read((db) => listDomains(db, o.merchant)));
      print(!!o.json, all, () =>
        all.length
          ? all.map((d) => `${d.host}  ${d.appId}  ${d.tls ? `certificate until ${d.certExpiresAt}` : 'no certificate'}`).join('\n')
          : 'no domains',
      );
    });
  domain
    .command('remove')
    .description('unmap a host (its page links fall back to CARDPROGRAM_PUBLIC_URL)')
    .requiredOption('--host <host>', 'host name')
    .option('--json', 'print JSON')
    .action(async (o: { host: string; json?: boolean }) => {
      const removed = await withServices((svc) =>
        runVerb(svc, removeDomain, { input: { host: o.host }, actor: cliOperator(), audit: audited('domain.remove', o.host) }),
      );
      print(!!o.json, removed, () => `${removed.host} removed from ${removed.appId}`);
    });
}
