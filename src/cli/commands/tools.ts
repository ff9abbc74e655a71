import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { ConfigError, loadConfig } from '../../config.js';
import { callOperation } from '../call.js';
import { progressBar, runDemo } from '../demo.js';
import { intArg, print, requireExistingData, withServices } from '../util.js';

/** A newcomer's tools: `call` and `demo`. */
export function toolCommands(program: Command): void {
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
    .option('--holders <n>', 'how many cardholders', intArg, 8)
    .option('--days <n>', 'how many days of history', intArg, 30)
    .option('--trades <n>', 'keep adding cardholders until there are at least this many transactions (for benchmarks)', intArg)
    .option('--seed <n>', 'the same seed makes the same demo (default: a new one each run)', intArg)
    .option('--merchant <appId>', 'the merchant to fill (default: the sandbox demo merchant)')
    .option('--json', 'print JSON')
    .action(async (o: { holders: number; days: number; trades?: number; seed?: number; merchant?: string; json?: boolean }) => {
      if (o.holders < 1 || o.holders > 10_000) throw new ConfigError('--holders must be 1 to 10000');
      if (o.days > 365) throw new ConfigError('--days must be at most 365');
      // The demo fills the running service's data: it starts from that, never from a new ./data.
      requireExistingData();
      const config = loadConfig();
      const result = await runDemo(config, {
        holders: o.holders,
        days: o.days,
        seed: o.seed ?? Math.floor(Math.random() * 1_000_000),
        ...(o.merchant === undefined ? {} : { merchant: o.merchant }),
        ...(o.trades === undefined ? {} : { trades: o.trades }),
        onProgress: progressBar(process.stderr, o.trades === undefined ? 'cardholders' : 'transactions'),
      });
      const first = result.holders[0];
      print(!!o.json, result, () =>
        [
          `Filled merchant ${result.appId}: ${result.holders.length} cardholders, ${result.holders.reduce((n, h) => n + h.cards.length, 0)} cards, ${result.trades} transactions (${result.declined} authorizations declined, not listed).`,
          ...(first
            ? [
                `For example ${first.name} <${first.email}>, card ${first.cards[0]?.cardId}. Try:`,
                `  export CARD_ID=${first.cards[0]?.cardId}`,
                `  npx cardprogram call tradeList --data '{"cardId":"'$CARD_ID'","beginDate":"${new Date(Date.now() - 30 * 86_400_000).toISOString().slice(0, 10)}","endDate":"${new Date().toISOString().slice(0, 10)}","start":0}'`,
                `  npx cardprogram call loginFreeLink --data '{"email":"${first.email}"}'     # then open the webUrl in a browser`,
              ]
            : []),
        ].join('\n'),
      );
    });
}
