import { readFileSync } from 'node:fs';
import { type Command, Option } from 'commander';
import { addDomain, listDomains, normalizeHost, removeDomain } from '../../domains/store.js';
import { createMerchant, SIGN_TYPES, type SignType } from '../../merchants/create.js';
import { listMerchants, updateMerchant } from '../../merchants/manage.js';
import { onOff, print, rateLimitArg, withServices } from '../util.js';

/** `merchant create|list|update` and `domain add|list|remove`. */
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
        const created = await withServices(async (svc) => {
          const made = await createMerchant({
            ctx: svc,
            input: { name: o.name, signType: o.signType, publicKeyPem, loginFree: o.loginFree, notifyUrl: o.notifyUrl },
          });
          if (o.domain === undefined) return made;
          try {
            await addDomain({ svc, input: { appId: made.appId, host: o.domain } });
          } catch (err) {
            // The merchant exists already: say so, with its credentials, rather than lose them.
            process.stderr.write(`cardprogram: merchant ${made.appId} created, but its domain was not: ${(err as Error).message}\n`);
            process.exitCode = 1;
          }
          return made;
        });
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
      const all = await withServices((svc) => listMerchants({ ctx: svc }));
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
    .option('--json', 'print JSON')
    .action(
      async (
        appId: string,
        o: { loginFree?: boolean; notifyUrl?: string; status?: 'active' | 'disabled'; rateLimit?: number | 'default'; json?: boolean },
      ) => {
        const updated = await withServices((svc) =>
          updateMerchant({
            ctx: svc,
            input: {
              appId,
              loginFree: o.loginFree,
              status: o.status,
              notifyUrl: o.notifyUrl === undefined ? undefined : o.notifyUrl === 'none' ? null : o.notifyUrl,
              rateLimit: o.rateLimit === 'default' ? null : o.rateLimit,
            },
          }),
        );
        print(
          !!o.json,
          updated,
          () =>
            `${updated.appId} updated: status ${updated.status}, login-free ${updated.loginFree ? 'on' : 'off'}, notify URL ${updated.notifyUrl ?? 'none'}, rate limit ${updated.rateLimit === null ? 'default' : `${updated.rateLimit}/s`}`,
        );
      },
    );

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
      const added = await withServices((svc) =>
        addDomain({
          svc,
          input: {
            appId: o.merchant,
            host: o.host,
            ...(certPem === undefined ? {} : { certPem }),
            ...(keyPem === undefined ? {} : { keyPem }),
          },
        }),
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
      const all = await withServices((svc) => listDomains({ svc, ...(o.merchant === undefined ? {} : { appId: o.merchant }) }));
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
      const removed = await withServices((svc) => removeDomain({ svc, host: o.host }));
      print(!!o.json, removed, () => `${removed.host} removed from ${removed.appId}`);
    });
}
