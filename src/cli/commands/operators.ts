import { type Command, Option } from 'commander';
import type { Kysely } from 'kysely';
import { ConfigError } from '../../config.js';
import {
  createOperator,
  listOperators,
  normaliseOperatorEmail,
  resetOperator,
  totpSecretOf,
  updateOperator,
} from '../../console/accounts.js';
import { codeAt, STEP_SECONDS, stepOf } from '../../console/totp.js';
import type { Services } from '../../context.js';
import { type DB, OPERATOR_ROLES, type OperatorRole } from '../../db/schema.js';
import { runVerb } from '../../runner.js';
import { audited, cliOperator, print, withServices } from '../util.js';

const roleOption = () =>
  new Option(
    '--role <role>',
    'viewer reads; support also freezes cards and resends callbacks; reviewer also decides cardholders and KYC; admin also manages merchants, funding, domains and operators',
  ).choices(OPERATOR_ROLES);

const operatorState = (email: string) => async (tx: Kysely<DB>) =>
  (await tx.selectFrom('operators').select(['role', 'status']).where('email', '=', email.toLowerCase()).executeTakeFirst()) ?? null;

/** `operator create|list|update|reset|code`: the console's accounts (docs/console.md). */
export function operatorCommands(program: Command): void {
  const operator = program.command('operator').description('console operator accounts');
  const setupLine = (publicUrl: string, token: string) => `${publicUrl}/console/setup?token=${token}`;
  const urlOption = () =>
    new Option('--url <address>', 'the console’s address the set-up link starts with (default: CARDPROGRAM_PUBLIC_URL)');
  /** The link's base: --url when given (checked before anything is written), else the configured public URL. */
  const linkBase = (svc: Services, url: string | undefined): string => {
    if (url === undefined) return svc.config.publicUrl;
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new ConfigError(`--url must be an address such as https://console.issuer.example, got "${url}"`);
    }
    if (parsed.protocol !== 'https:' && (svc.config.env === 'production' || parsed.protocol !== 'http:')) {
      throw new ConfigError(`--url must be an https:// address${svc.config.env === 'production' ? ' in production' : ''}, got "${url}"`);
    }
    return url.replace(/\/+$/, '');
  };

  operator
    .command('create <email>')
    .description('create a console account and print its one-time set-up link (24 hours)')
    .addOption(roleOption().makeOptionMandatory())
    .addOption(urlOption())
    .option('--json', 'print JSON')
    .action(async (email: string, o: { role: OperatorRole; url?: string; json?: boolean }) => {
      const made = await withServices(async (svc) => {
        const base = linkBase(svc, o.url);
        const created = await runVerb(svc, createOperator, {
          input: { email, role: o.role },
          actor: cliOperator(),
          audit: audited('operator.create', email.toLowerCase()),
        });
        return { ...created, setupUrl: setupLine(base, created.setupToken) };
      });
      const { setupToken: _token, ...shown } = made;
      print(!!o.json, shown, () =>
        [
          `${made.email} (${made.role}) created. Send this one-time set-up link over a channel you trust; it works once, for 24 hours:`,
          `  ${made.setupUrl}`,
          o.url
            ? '(its address is the --url given: the console must answer there)'
            : '(its address is CARDPROGRAM_PUBLIC_URL as this command sees it: run the command with the service’s settings, or give --url)',
        ].join('\n'),
      );
    });

  operator
    .command('list')
    .description('the console accounts')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }) => {
      const all = await withServices((svc) => svc.database.read((db) => listOperators(db, svc.clock())));
      print(!!o.json, all, () =>
        all.length
          ? all
              .map(
                (a) =>
                  `${a.email.padEnd(32)} ${a.role.padEnd(8)} ${a.status.padEnd(8)} set-up:${a.setup.padEnd(7)} totp:${a.totp ? 'yes' : 'no '} last login:${a.lastLoginAt ?? 'never'}${a.lockedUntil ? ` locked until ${a.lockedUntil}` : ''}`,
              )
              .join('\n')
          : 'no operators',
      );
    });

  operator
    .command('update <email>')
    .description(
      'change an account’s role or status (--status active also unlocks it); its open sessions end, and a new role or disabling ends its open set-up link',
    )
    .addOption(roleOption())
    .addOption(new Option('--status <status>', 'disable or enable the account').choices(['active', 'disabled']))
    .option('--json', 'print JSON')
    .action(async (email: string, o: { role?: OperatorRole; status?: 'active' | 'disabled'; json?: boolean }) => {
      if (!o.role && !o.status) throw new ConfigError('say --role or --status');
      const updated = await withServices((svc) =>
        runVerb(svc, updateOperator, {
          input: { email, role: o.role, status: o.status },
          actor: cliOperator(),
          audit: audited('operator.update', email.toLowerCase(), operatorState(email)),
        }),
      );
      print(
        !!o.json,
        updated,
        () =>
          `${updated.email}: ${updated.role}, ${updated.status}${updated.setup === 'expired' ? ' (not set up and no open set-up link: `operator reset` makes one)' : ''}`,
      );
    });

  operator
    .command('reset <email>')
    .description('a forgotten password or a lost phone: remove both, end the sessions, and print a new set-up link')
    .addOption(urlOption())
    .option('--json', 'print JSON')
    .action(async (email: string, o: { url?: string; json?: boolean }) => {
      const reset = await withServices(async (svc) => {
        const base = linkBase(svc, o.url);
        const r = await runVerb(svc, resetOperator, {
          input: { email },
          actor: cliOperator(),
          audit: audited('operator.reset', email.toLowerCase(), operatorState(email)),
        });
        return { ...r, setupUrl: setupLine(base, r.setupToken) };
      });
      const { setupToken: _token, ...shown } = reset;
      print(!!o.json, shown, () => `${reset.email}: new set-up link (once, 24 hours):\n  ${reset.setupUrl}`);
    });

  operator
    .command('code <email>')
    .description('sandbox only: print an account’s current one-time code, as its authenticator app would')
    .action(async (email: string) => {
      const code = await withServices(async (svc) => {
        if (svc.config.env !== 'sandbox') throw new ConfigError('operator code works only in the sandbox: use the authenticator app');
        const row = await svc.database.read((db) =>
          db.selectFrom('operators').select(['id', 'totp_enc']).where('email', '=', normaliseOperatorEmail(email)).executeTakeFirst(),
        );
        const secret = row ? totpSecretOf(svc, row) : null;
        if (!secret) throw new ConfigError(`${email} has no second factor (or no account)`);
        const now = svc.clock();
        return { code: codeAt(secret, stepOf(now)), seconds: STEP_SECONDS - Math.floor((now / 1000) % STEP_SECONDS) };
      });
      process.stdout.write(`${code.code}  (valid for ${code.seconds} more seconds, and once)\n`);
    });
}
