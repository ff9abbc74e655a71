import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { Command } from 'commander';
import { ConfigError } from '../../config.js';
import { DomainError } from '../../errors.js';
import { exponent } from '../../money/currency.js';
import { currencyNumeric } from '../../money/iso4217.js';
import { buildAReq } from '../../three-ds/areq-builder.js';
import { maskedAcct } from '../../three-ds/store.js';
import { withServices } from '../util.js';

interface AReqOptions {
  card?: string;
  pan?: string;
  expiry?: string;
  amount: string;
  currency: string;
  merchant?: string;
  challengeInd?: string;
  url?: string;
  cert?: string;
  key?: string;
  ca?: string;
  timeout: number;
  json?: boolean;
}

/** The ACS's port when neither --url nor CARDPROGRAM_3DS_PORT says (the one docs/3ds.md starts it on). */
const DEFAULT_ACS_PORT = 8443;

/** A decimal amount in the currency's minor units, without floating point. */
function minorUnits(amount: string, currency: string): number {
  const digits = exponent(currency, '--currency');
  const m = /^(\d{1,12})(?:\.(\d+))?$/.exec(amount);
  if (!m) throw new ConfigError('--amount must be a positive amount, e.g. 12.50');
  const frac = m[2] ?? '';
  if (frac.length > digits) throw new ConfigError(`--amount: ${currency} has at most ${digits} decimals`);
  return Number(m[1]) * 10 ** digits + Number(frac.padEnd(digits, '0') || 0);
}

/** The card's number and expiry from the vault (--card), never printed; or --pan and --expiry as given. */
async function cardData(o: AReqOptions): Promise<{ pan: string; expiry?: string; port?: number }> {
  if ((o.card === undefined) === (o.pan === undefined)) throw new ConfigError('give --card CARD_ID or --pan PAN (one of them)');
  if (o.pan !== undefined) {
    if (!/^\d{13,19}$/.test(o.pan)) throw new ConfigError('--pan must be 13 to 19 digits');
    if (o.expiry !== undefined && !/^\d{2}(0[1-9]|1[0-2])$/.test(o.expiry)) throw new ConfigError('--expiry must be YYMM');
    return { pan: o.pan, ...(o.expiry ? { expiry: o.expiry } : {}) };
  }
  return withServices(async (svc) => {
    return svc.database.read(async (db) => {
      const card = await db
        .selectFrom('cards')
        .selectAll()
        .where('id', '=', o.card as string)
        .executeTakeFirst();
      if (!card) throw new DomainError('cardNotFound', `no card ${o.card}`);
      return {
        pan: await svc.vault.decrypt(db, card.id, card.pan_enc, card.pan_key_id),
        expiry: `${String(card.expiry_year % 100).padStart(2, '0')}${String(card.expiry_month).padStart(2, '0')}`,
        ...(svc.config.threeDs.port ? { port: svc.config.threeDs.port } : {}),
      };
    });
  });
}

/** Posts the AReq to the ACS as a DS does (HTTPS with a client certificate when --cert/--key/--ca). */
function post(url: string, body: string, o: AReqOptions): Promise<{ status: number; text: string }> {
  const given = [o.cert, o.key, o.ca].filter(Boolean).length;
  if (given > 0 && given < 3) throw new ConfigError('--cert, --key and --ca go together (TLS with the DS’s client certificate)');
  const u = new URL(url);
  const tls =
    given === 3 ? { cert: readFileSync(o.cert as string), key: readFileSync(o.key as string), ca: readFileSync(o.ca as string) } : {};
  const client = u.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.request(
      u,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        timeout: o.timeout,
        ...tls,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${o.timeout} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

const line = (m: Record<string, unknown>, names: string[]) =>
  names
    .filter((n) => m[n] !== undefined)
    .map((n) => `  ${n}: ${String(m[n])}`)
    .join('\n');

/** `cardprogram threeds areq`: the DS simulator (decisions §14.6), an AReq built for a card, sent to the ACS, both shown (PAN masked). */
export function threeDsCommands(program: Command): void {
  const threeds = program.command('threeds').description('3-D Secure: the ACS of the program’s cards (docs/3ds.md)');
  threeds
    .command('areq')
    .description(
      'send an AReq to the ACS as a directory server would (EMV 3DS 2.2.0, browser, payment) and print the ARes or Erro; exit 0 on Y or C, 1 otherwise',
    )
    .option('--card <cardId>', 'the card (its number and expiry from the vault; needs the database)')
    .option('--pan <pan>', 'the card number instead')
    .option('--expiry <yymm>', 'with --pan: cardExpiryDate, YYMM (left out: none sent)')
    .requiredOption('--amount <amount>', 'purchaseAmount in major units, e.g. 12.50')
    .option('--currency <code>', 'purchaseCurrency (ISO 4217 alphabetic)', 'EUR')
    .option('--merchant <name>', 'merchantName (at most 40 characters)', 'Sandbox Shop')
    .option('--challenge-ind <code>', 'threeDSRequestorChallengeInd, 01 to 09 (04: challenge mandated)')
    .option('--url <url>', 'the ACS (default http://127.0.0.1:CARDPROGRAM_3DS_PORT/3ds/areq, else port 8443)')
    .option('--cert <file>', 'TLS: the DS’s client certificate (PEM)')
    .option('--key <file>', 'TLS: its private key (PEM)')
    .option('--ca <file>', 'TLS: the CA the ACS’s certificate is verified against (PEM)')
    .option('--timeout <ms>', 'how long to wait for the answer', (v) => Number(v), 10_000)
    .option('--json', 'print JSON')
    .action(async (o: AReqOptions) => {
      const currency = o.currency.toUpperCase();
      const numeric = currencyNumeric(currency);
      if (numeric === null) throw new ConfigError(`--currency: no ISO 4217 numeric code known for ${o.currency}`);
      if (o.challengeInd !== undefined && !/^0[1-9]$/.test(o.challengeInd)) throw new ConfigError('--challenge-ind must be 01 to 09');
      if (o.merchant !== undefined && (o.merchant.length < 1 || o.merchant.length > 40))
        throw new ConfigError('--merchant must be 1 to 40 characters');
      const amount = minorUnits(o.amount, currency);
      const card = await cardData(o);
      const port = card.port ?? (process.env.CARDPROGRAM_3DS_PORT ? Number(process.env.CARDPROGRAM_3DS_PORT) : DEFAULT_ACS_PORT);
      const url = o.url ?? `http://127.0.0.1:${port}/3ds/areq`;
      const areq = buildAReq({
        pan: card.pan,
        ...(card.expiry ? { expiry: card.expiry } : {}),
        amount,
        currency: numeric,
        exponent: exponent(currency),
        ...(o.merchant ? { merchantName: o.merchant } : {}),
        ...(o.challengeInd ? { challengeInd: o.challengeInd } : {}),
        notificationURL: 'https://3dss.sandbox.invalid/notification',
      });
      const shown = { ...areq, acctNumber: maskedAcct(card.pan) };
      const res = await post(url, JSON.stringify(areq), o);
      let answer: Record<string, unknown>;
      try {
        answer = JSON.parse(res.text) as Record<string, unknown>;
      } catch {
        throw new ConfigError(`the ACS at ${url} answered HTTP ${res.status} without JSON`);
      }
      if (o.json) process.stdout.write(`${JSON.stringify({ areq: shown, answer }, null, 2)}\n`);
      else {
        const main = ['acctNumber', 'messageVersion', 'purchaseAmount', 'purchaseCurrency', 'merchantName', 'threeDSRequestorChallengeInd'];
        process.stdout.write(
          `AReq → ${url}\n${line(shown, main)}\n${answer.messageType ?? 'answer'} (HTTP ${res.status})\n${line(answer, Object.keys(answer))}\n`,
        );
      }
      if (!(answer.messageType === 'ARes' && (answer.transStatus === 'Y' || answer.transStatus === 'C'))) process.exitCode = 1;
    });
}
