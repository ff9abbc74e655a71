import { readFileSync } from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';
import { pino } from 'pino';
import { listCallbacks, retryCallbacks, startWorker } from '../callbacks/manage.js';
import { setCardFrozen } from '../cards/status.js';
import { ConfigError, loadConfig } from '../config.js';
import type { Services } from '../context.js';
import { MasterKeyMismatch } from '../crypto/secretbox.js';
import { openDatabase } from '../db/index.js';
import { migrateToLatest } from '../db/migrate.js';
import { addDomain, listDomains, normalizeHost, removeDomain } from '../domains/store.js';
import { DomainError } from '../errors.js';
import { reviewHolder } from '../holders/review.js';
import { decideKyc } from '../kyc/decide.js';
import { createMerchant, SIGN_TYPES, type SignType } from '../merchants/create.js';
import { listMerchants, updateMerchant } from '../merchants/manage.js';
import { serve } from '../server.js';
import { createServices } from '../services.js';
import { callOperation } from './call.js';
import { progressBar, runDemo } from './demo.js';

/** Opens the configured database (migrated), runs fn, closes it. */
async function withServices<T>(fn: (svc: Services) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const database = openDatabase(config.databaseUrl);
  try {
    await migrateToLatest(database);
    const svc = createServices(config, database, pino({ level: 'warn' }, pino.destination(2)));
    await svc.vault.ensureKeys(database.db);
    return await fn(svc);
  } finally {
    await database.close();
  }
}

function print(json: boolean, value: unknown, human: () => string): void {
  process.stdout.write(`${json ? JSON.stringify(value, null, 2) : human()}\n`);
}

const onOff = (v: string): boolean => {
  if (v === 'on' || v === 'true') return true;
  if (v === 'off' || v === 'false') return false;
  throw new InvalidArgumentError('expected on or off');
};

function intArg(v: string): number {
  if (!/^\d+$/.test(v)) throw new InvalidArgumentError('expected a whole number');
  return Number(v);
}

export function buildCli(): Command {
  const program = new Command('cardprogram')
    .description('cardprogram: a self-hostable card-program service. Configuration is read from the environment (see README).')
    .showHelpAfterError();

  program
    .command('serve', { isDefault: true })
    .description('run the HTTP service')
    .action(async () => {
      await serve(loadConfig());
    });

  program
    .command('migrate')
    .description('apply pending database migrations')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }) => {
      const config = loadConfig();
      const database = openDatabase(config.databaseUrl);
      try {
        const applied = await migrateToLatest(database);
        print(!!o.json, { applied }, () => (applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date'));
      } finally {
        await database.close();
      }
    });

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
              .map((m) => `${m.appId}  ${m.status.padEnd(8)} ${m.signType.padEnd(11)} login-free:${m.loginFree ? 'on ' : 'off'}  ${m.name}`)
              .join('\n')
          : 'no merchants',
      );
    });
  merchant
    .command('update <appId>')
    .description("change a merchant's settings")
    .option('--login-free <on|off>', 'enable or disable the login-free page', onOff)
    .option('--notify-url <url>', 'callback URL for holder.audit and trade events ("none" removes it)')
    .addOption(new Option('--status <status>', 'enable or disable the merchant').choices(['active', 'disabled']))
    .option('--json', 'print JSON')
    .action(async (appId: string, o: { loginFree?: boolean; notifyUrl?: string; status?: 'active' | 'disabled'; json?: boolean }) => {
      const updated = await withServices((svc) =>
        updateMerchant({
          ctx: svc,
          input: {
            appId,
            loginFree: o.loginFree,
            status: o.status,
            notifyUrl: o.notifyUrl === undefined ? undefined : o.notifyUrl === 'none' ? null : o.notifyUrl,
          },
        }),
      );
      print(
        !!o.json,
        updated,
        () =>
          `${updated.appId} updated: status ${updated.status}, login-free ${updated.loginFree ? 'on' : 'off'}, notify URL ${updated.notifyUrl ?? 'none'}`,
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

  program
    .command('worker')
    .description('deliver callbacks (and, in the sandbox, run the automatic KYC reviewer) without serving HTTP')
    .action(async () => {
      const config = loadConfig();
      const database = openDatabase(config.databaseUrl);
      await migrateToLatest(database);
      const svc = createServices(config, database, pino({ level: config.logLevel }));
      await svc.vault.ensureKeys(database.db);
      const worker = startWorker(svc);
      svc.log.info({ owner: worker.owner }, 'callback worker running');
      // The worker's own timers do not hold the process open (they must not keep a closing service
      // alive); this command exists to run it, so it holds the process until told to stop.
      const keepAlive = setInterval(() => undefined, 60_000);
      await new Promise<void>((resolve) => {
        for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => resolve());
      });
      clearInterval(keepAlive);
      await worker.stop();
      await database.close();
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

  program
    .command('call <operation>')
    .description('sign a request as a merchant and send it to the running service; prints the reply (exit 1 on an error reply)')
    .option('--data <json>', 'the body without appId and sign, as JSON ("-" reads it from stdin)', '{}')
    .option('--merchant <appId>', 'the merchant that signs (default: the sandbox demo merchant)')
    .option('--key <file>', 'PEM private key, for an RSA-SHA256 merchant')
    .option('--url <url>', 'the service (default: CARDPROGRAM_PUBLIC_URL, or http://HOST:PORT)')
    .addHelpText(
      'after',
      '\nOPERATION is an operation name (e.g. tradeList, holderCreate, sandboxAuthorize) or its path; randomStr and\ntimestamp are added when the operation takes them. Example:\n  cardprogram call cardQuery --data \'{"cardId":"card_…"}\'',
    )
    .action(async (operation: string, o: { data: string; merchant?: string; key?: string; url?: string }) => {
      const text = o.data === '-' ? readFileSync(0, 'utf8') : o.data;
      let data: unknown;
      try {
        data = JSON.parse(text);
      } catch {
        throw new ConfigError('--data must be a JSON object');
      }
      if (typeof data !== 'object' || data === null || Array.isArray(data)) throw new ConfigError('--data must be a JSON object');
      const reply = await withServices((svc) =>
        callOperation(svc, {
          operation,
          data: data as Record<string, unknown>,
          url: o.url ?? svc.config.publicUrl,
          ...(o.merchant === undefined ? {} : { merchant: o.merchant }),
          ...(o.key === undefined ? {} : { keyPem: readFileSync(o.key, 'utf8') }),
        }),
      );
      process.stdout.write(`${JSON.stringify(reply.body, null, 2)}\n`);
      const failed =
        reply.status >= 300 ||
        (typeof reply.body === 'object' && reply.body !== null && (reply.body as { error?: unknown }).error === true);
      if (failed) process.exitCode = 1;
    });

  program
    .command('demo')
    .description('fill the sandbox with cardholders, cards and weeks of transactions, to see a living system')
    .option('--holders <n>', 'how many cardholders (default 8)', intArg, 8)
    .option('--days <n>', 'how many days of history (default 30)', intArg, 30)
    .option('--seed <n>', 'the same seed makes the same demo (default: a new one each run)', intArg)
    .option('--merchant <appId>', 'the merchant to fill (default: the sandbox demo merchant)')
    .option('--json', 'print JSON')
    .action(async (o: { holders: number; days: number; seed?: number; merchant?: string; json?: boolean }) => {
      if (o.holders < 1 || o.holders > 10_000) throw new ConfigError('--holders must be 1 to 10000');
      if (o.days > 365) throw new ConfigError('--days must be at most 365');
      const config = loadConfig();
      const result = await runDemo(config, {
        holders: o.holders,
        days: o.days,
        seed: o.seed ?? Math.floor(Math.random() * 1_000_000),
        ...(o.merchant === undefined ? {} : { merchant: o.merchant }),
        onProgress: o.json ? () => undefined : progressBar(process.stderr),
      });
      const first = result.holders[0];
      print(!!o.json, result, () =>
        [
          `Filled merchant ${result.appId}: ${result.holders.length} cardholders, ${result.holders.reduce((n, h) => n + h.cards.length, 0)} cards, ${result.trades} transactions (${result.declined} authorizations declined, not listed).`,
          ...(first
            ? [
                `For example ${first.name} <${first.email}>, card ${first.cards[0]?.cardId}:`,
                `  npx cardprogram call tradeList --data '{"cardId":"${first.cards[0]?.cardId}","beginDate":"${new Date(Date.now() - 30 * 86_400_000).toISOString().slice(0, 10)}","endDate":"${new Date().toISOString().slice(0, 10)}","start":0}'`,
                `  npx cardprogram call loginFreeLink --data '{"email":"${first.email}"}'     # then open the webUrl in a browser`,
              ]
            : []),
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

  const callbacks = program.command('callbacks').description('callback deliveries');
  callbacks
    .command('list')
    .description('recent callback events and their delivery state')
    .addOption(new Option('--status <status>', 'only these').choices(['pending', 'delivered', 'failed']))
    .option('--merchant <appId>', 'only this merchant’s')
    .option('--limit <n>', 'how many (default 50)', intArg)
    .option('--json', 'print JSON')
    .action(async (o: { status?: 'pending' | 'delivered' | 'failed'; merchant?: string; limit?: number; json?: boolean }) => {
      const rows = await withServices((svc) =>
        listCallbacks({ svc, filter: { status: o.status, merchantId: o.merchant, limit: o.limit } }),
      );
      print(!!o.json, rows, () =>
        rows.length
          ? rows
              .map(
                (r) =>
                  `${r.eventId}  ${r.status.padEnd(9)} ${r.type.padEnd(12)} attempts:${r.attempts}  ${r.url}${r.lastError ? `  last error: ${r.lastError}` : ''}`,
              )
              .join('\n')
          : 'no callback events',
      );
    });
  callbacks
    .command('retry [eventIds...]')
    .description('send events again now (same eventId), or every failed one with --failed')
    .option('--failed', 'every failed event')
    .option('--merchant <appId>', 'only this merchant’s')
    .option('--json', 'print JSON')
    .action(async (eventIds: string[], o: { failed?: boolean; merchant?: string; json?: boolean }) => {
      const queued = await withServices((svc) =>
        retryCallbacks({
          svc,
          input: { eventIds, ...(o.failed ? { allFailed: true } : {}), ...(o.merchant ? { merchantId: o.merchant } : {}) },
        }),
      );
      print(!!o.json, { queued }, () => `${queued} event(s) queued for delivery`);
    });

  return program;
}

function describe(err: unknown): string {
  if (err instanceof DomainError || err instanceof ConfigError || err instanceof MasterKeyMismatch) return err.message;
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number };
  if (e?.code === 'ENOENT' && e.path) return `no such file: ${e.path}`;
  if (e?.code === 'EACCES' && e.path) return `permission denied: ${e.path}`;
  if (e?.code === 'ECONNREFUSED')
    return `cannot reach the database at ${e.address ?? ''}:${e.port ?? ''} (is PostgreSQL running? check DATABASE_URL)`;
  if (e?.code === 'EADDRINUSE') return `port ${e.port ?? ''} is already in use (set PORT)`;
  return err instanceof Error ? err.message : String(err);
}

export async function main(argv: string[]): Promise<void> {
  try {
    await buildCli().parseAsync(argv);
  } catch (err) {
    // An operator gets one line saying what is wrong, never a stack trace (DEBUG=1 shows it).
    const json = argv.includes('--json');
    const code =
      err instanceof DomainError ? err.code : err instanceof ConfigError || err instanceof MasterKeyMismatch ? 'config' : 'error';
    const msg = describe(err);
    if (json) process.stderr.write(`${JSON.stringify({ code, msg })}\n`);
    else process.stderr.write(`cardprogram: ${msg}\n`);
    if (process.env.DEBUG && err instanceof Error) process.stderr.write(`${err.stack}\n`);
    process.exitCode = 1;
  }
}
