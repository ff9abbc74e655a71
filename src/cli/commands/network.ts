import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { type Command, Option } from 'commander';
import { ClearingFileError, type ClearingReport, clearingFile, importClearing } from '../../card-network/clearing-file.js';
import { type SettlementLine, settlement } from '../../card-network/settlement.js';
import { ConfigError } from '../../config.js';
import { audited, dateArg, print, withDatabase, withServices } from '../util.js';
import { exceptionCommands } from './network-exceptions.js';
import { type SendOptions, SIMULATOR_ACQUIRER, send, TYPES } from './network-send.js';

/**
 * `cardprogram network …` (docs/network.md): the acquirer simulator (`send`, decisions §12.11),
 * the clearing file (`file`, `import`, §12.10) and the day's settlement (`settlement`).
 */

/** The import's report: a line per message, then the totals per currency. */
function showImport(r: ClearingReport): string {
  const lines = r.lines.map((l) => {
    const amount = l.amount === null ? '' : `${l.currency ?? '?'} ${l.amount}`;
    return [
      String(l.index).padStart(4),
      (l.mti ?? '----').padEnd(4),
      (l.stan ?? '------').padEnd(6),
      (l.kind ?? '-').padEnd(8),
      amount.padStart(14),
      l.outcome.padEnd(18),
      (l.posted ? `${l.posted.movement} ${l.posted.currency} ${l.posted.amount}` : '').padEnd(24),
      l.reason ?? '',
    ]
      .join('  ')
      .trimEnd();
  });
  const totals = r.totals.map(
    (t) =>
      `${t.currency}: ${t.messages} messages (${t.matched} matched, ${t.matchedDifference} matched-difference, ${t.forced} forced, ${t.held} held, ${t.duplicate} duplicate, ${t.refused} refused); posted: cleared ${t.cleared}, refunded ${t.refunded}, reversed ${t.reversed}`,
  );
  return [
    `   #  MTI   STAN    kind              amount  outcome             posted                    reason`,
    ...lines,
    '',
    ...totals,
  ].join('\n');
}

export function networkCommands(program: Command): void {
  const network = program
    .command('network')
    .description("the card network link: an acquirer simulator, the clearing file and the day's settlement (docs/network.md)");

  network
    .command('send')
    .description(
      'send one message to the network link as an acquirer would, print both messages decoded (PAN masked, CVV2 never), exit 0 on 00 (2 on another response code, 1 when there is no answer)',
    )
    .option(
      '--card <cardId>',
      'the card, its number, expiry and CVV2 read from the vault (needs the database and master key, as other commands)',
    )
    .option('--pan <pan>', 'the card number instead (needs --expiry; --cvv optional)')
    .option('--expiry <yymm>', 'with --pan: the expiry, YYMM or MM/YY')
    .option(
      '--cvv <cvv2>',
      'with --pan: the CVV2 (field 48, subelement 92); without it a purchase is sent as credential on file (field 22 102)',
    )
    .option('--eci <nn>', '3-D Secure: the ECI of the authentication (field 48 subelement 42, 2 digits: 05 Visa, 02 Mastercard)')
    .option(
      '--authentication-value <base64>',
      '3-D Secure: the authentication value of the ARes or RReq (field 48 subelement 43, 28 Base64 characters; never printed); the purchase is then e-commerce (field 22 810), with or without a CVV2',
    )
    .addOption(new Option('--type <type>', 'the message').choices(TYPES as unknown as string[]).makeOptionMandatory())
    .option(
      '--amount <amount>',
      "major units (12.50); clear/refund: default the original's; reverse: the amount reversed (default all: a full reversal)",
    )
    .option(
      '--currency <code>',
      "EUR, USD, … or ISO 4217 numeric (default: the card's, as CARDPROGRAM_NETWORK_CURRENCIES presents it; clear/reverse/refund: the original's)",
    )
    .option('--mcc <mcc>', 'merchant category code (field 18)', '5411')
    .option('--acceptor <text>', 'the acceptor, "NAME, CITY CC" (field 43)', 'Corner Grocery, Berlin DE')
    .option(
      '--original <stan|tradeId>',
      "clear/reverse: the authorization (its STAN, or trade id); refund: the payment (its clearing's STAN, or the payment's trade id). Default: the card's newest sent with this acquirer id",
    )
    .option('--acquirer <id>', 'field 32, the acquiring institution', SIMULATOR_ACQUIRER)
    .option('--mti <mti>', 'send with this MTI instead: 0200 (a single-message purchase), 0420 (a reversal advice), a repeat (0101, …)')
    .option('--host <host>', 'the link (default CARDPROGRAM_NETWORK_HOST, else HOST, else 127.0.0.1)')
    .option('--port <port>', "the link's port (default CARDPROGRAM_NETWORK_PORT, else 8583)", (v) => Number(v))
    .option('--cert <file>', "TLS: this client's certificate (PEM)")
    .option('--key <file>', 'TLS: its private key (PEM)')
    .option('--ca <file>', "TLS: the CA the link's certificate is verified against (PEM)")
    .option('--servername <name>', "TLS: the name the link's certificate must carry (default: --host, when it is a name)")
    .option('--timeout <ms>', 'how long to wait for the answer', (v) => Number(v), 10_000)
    .option('--write <file>', 'append the framed message to FILE instead of sending it (to make a clearing file)')
    .option(
      '--force',
      'with --type clear: send it even when the authorization holds nothing any more (cleared already, released): a forced post',
    )
    .option('--json', 'print JSON')
    .addHelpText(
      'after',
      '\nTypes: purchase and cash (0100, processing 00/01), balance (0100, 31), advice (0120: answered 12 for now),\nclear (0220 naming its 0100 in field 90), refund (0220, processing 20, naming its payment), reverse (0400, field 95 when partial).\nExample:\n  cardprogram network send --card card_… --type purchase --amount 12.50\n  cardprogram network send --card card_… --type clear\n  cardprogram network send --card card_… --type purchase --amount 12.50 --eci 05 --authentication-value AAABBEg0VhI0VniQEjRWAAAAAAA=',
    )
    .action((o: SendOptions) => send(o));

  network
    .command('import <file>')
    .description(
      'post a clearing file (framed 0220 and 0420 advices, as on the link) exactly once; print per message matched, matched-difference, forced, duplicate or refused (with the reason) and what it posted (cleared, refunded or reversed), and totals per currency',
    )
    .option('--json', 'print JSON')
    .action(async (file: string, o: { json?: boolean }) => {
      const bytes = readFileSync(file);
      // Each message that posts is recorded in the audit trail under its card, with the operator (issue 43).
      const audit = (cardId: string) =>
        audited(
          'network.import',
          cardId,
          async (tx) =>
            (await tx
              .selectFrom('cards')
              .select(['available_balance', 'ledger_balance', 'debt', 'currency'])
              .where('id', '=', cardId)
              .executeTakeFirst()) ?? null,
        );
      const report = await withServices((svc) => importClearing(svc, bytes, audit)).catch((err: unknown) => {
        if (err instanceof ClearingFileError) throw new ConfigError(`${file}: ${err.message}`);
        throw err;
      });
      print(!!o.json, report, () => showImport(report));
    });

  network
    .command('settlement')
    .description(
      "the day's settlement with the network, per currency and merchant: what its messages cleared, refunded and reversed, the disputes it decided (won, lost), the clearings held in suspense and returned (exceptions), and the net owed to the network",
    )
    .requiredOption('--date <yyyy-mm-dd>', 'the business day', dateArg)
    .option('--csv', 'print CSV: a row per line (date,currency,merchant_id,line,count,amount,net); the net column sums to the net owed')
    .option('--json', 'print JSON')
    .action(async (o: { date: string; csv?: boolean; json?: boolean }) => {
      const report = await withDatabase((database) => database.read((db) => settlement(db, o.date)));
      if (o.csv) {
        const rows = [
          'date,currency,merchant_id,line,count,amount,net',
          ...report.rows.flatMap((r) => r.lines.map((l) => [o.date, r.currency, r.merchantId, l.line, l.count, l.amount, l.net].join(','))),
        ];
        process.stdout.write(`${rows.join('\n')}\n`);
        return;
      }
      const shown = (lines: SettlementLine[]) => lines.map((l) => `${l.line} ${l.amount} (${l.count})`).join(', ');
      print(!!o.json, report, () =>
        [
          `settlement of ${o.date}`,
          ...(report.rows.length === 0 ? ['nothing cleared, refunded, reversed or disputed with the network that day'] : []),
          ...report.rows.map((r) => `${r.currency} ${r.merchantId}: ${shown(r.lines)}; net owed ${r.net}`),
          ...report.totals.map((t) => `${t.currency} total: ${shown(t.lines)}; net owed to the network ${t.net}`),
        ].join('\n'),
      );
    });

  exceptionCommands(network);

  network
    .command('file <out>')
    .description(
      'write a clearing file from a JSON list of messages ([{"mti":"0220","fields":{"2":"…","3":"000000",…}}, …]), each framed as on the link',
    )
    .option('--from <file>', 'the JSON list (default: stdin)')
    .option('--append', 'add to OUT instead of replacing it')
    .action((out: string, o: { from?: string; append?: boolean }) => {
      const text = readFileSync(o.from ?? 0, 'utf8');
      let list: unknown;
      try {
        list = JSON.parse(text);
      } catch {
        throw new ConfigError('the messages must be JSON: [{"mti":"0220","fields":{"3":"000000",…}}, …]');
      }
      if (!Array.isArray(list)) throw new ConfigError('the messages must be a JSON list');
      const messages = list.map((m, i) => {
        const { mti, fields } = (m ?? {}) as { mti?: unknown; fields?: unknown };
        if (typeof mti !== 'string' || typeof fields !== 'object' || fields === null) {
          throw new ConfigError(`message ${i + 1}: needs "mti" and "fields"`);
        }
        return { mti, fields: new Map(Object.entries(fields).map(([k, v]) => [Number(k), String(v)])) };
      });
      const bytes = clearingFile(messages);
      if (o.append) appendFileSync(out, bytes);
      else writeFileSync(out, bytes);
      process.stdout.write(`${messages.length} messages written to ${out}\n`);
    });
}
