import { randomInt } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { cardByPan, maskedPan, subelements } from '../../card-network/card-data.js';
import { clearingFile } from '../../card-network/clearing-file.js';
import { acceptorField, LinkClient, transmissionTime } from '../../card-network/link/client.js';
import { ConfigError } from '../../config.js';
import { DEFAULT_NETWORK_CURRENCIES } from '../../config-network.js';
import type { Services } from '../../context.js';
import type { IsoMessage } from '../../iso8583/codec.js';
import { encodeField48, Field48Error, SECRET_SUBELEMENTS, SUBELEMENTS } from '../../iso8583/field48.js';
import { FIELDS, type FieldSpec } from '../../iso8583/fields.js';
import { codeMeaning, ResponseCode } from '../../iso8583/response-codes.js';
import { exponent } from '../../money/currency.js';
import { currencyAlpha, currencyNumeric } from '../../money/iso4217.js';
import { print, withServices } from '../util.js';
import { cardFromVault, findOriginal, madeLine, madeTrade, refuseEmptyHold, type SendOptions, TYPES } from './network-send-reads.js';

export { type SendOptions, TYPES };

/** `cardprogram network send`: the acquirer simulator (decisions §12.11), a message built for a card, sent, and both shown (./network.ts registers it). */

/** Field 32 of what the simulator sends unless --acquirer: how it finds the authorizations it sent. */
export const SIMULATOR_ACQUIRER = '99999999';

/** The link's port when neither --port nor CARDPROGRAM_NETWORK_PORT says (the one docs/getting-started.md starts it on). */
const DEFAULT_LINK_PORT = 8583;

function numericCurrency(c: string): string {
  if (/^\d{3}$/.test(c)) return c;
  const code = currencyNumeric(c.toUpperCase()) ?? DEFAULT_NETWORK_CURRENCIES[c.toUpperCase()];
  if (!code) throw new ConfigError(`--currency: no ISO 4217 numeric code known for ${c}`);
  return code;
}

function minorAmount(amount: string, numeric: string): string {
  if (!/^\d+(\.\d+)?$/.test(amount)) throw new ConfigError('--amount must be a positive amount, e.g. 12.50');
  const digits = exponent(currencyAlpha(numeric) ?? 'EUR');
  const [whole, frac = ''] = amount.split('.');
  if (frac.length > digits) throw new ConfigError(`--amount: at most ${digits} decimals`);
  return String(Number(whole) * 10 ** digits + Number(frac.padEnd(digits, '0') || 0)).padStart(12, '0');
}

const pad2 = (n: number) => String(n).padStart(2, '0');

/** The message `network send` sends. */
async function buildMessage(svc: Services | null, o: SendOptions): Promise<IsoMessage> {
  let card: { id: string | null; pan: string; expiry: string | null; cvv: string | null; currency: string | null };
  if (o.card) {
    if (!svc) throw new Error('unreachable');
    card = await cardFromVault(svc, o.card);
  } else {
    const pan = o.pan as string;
    const found = svc ? await svc.database.read((db) => cardByPan(svc, db, pan)) : null;
    card = { id: found?.id ?? null, pan, expiry: o.expiry ?? null, cvv: o.cvv ?? null, currency: found?.currency ?? null };
  }
  const currencies = svc?.config.network.currencies ?? DEFAULT_NETWORK_CURRENCIES;
  const now = new Date();
  const f7 = transmissionTime(now);
  const stan = String(randomInt(1, 1_000_000)).padStart(6, '0');
  const acceptor = acceptorField(o.acceptor);
  if (!acceptor) throw new ConfigError('--acceptor must read "NAME, CITY CC" (CC: the country, 2 letters)');
  const common: Record<number, string> = {
    7: f7,
    11: stan,
    12: `${pad2(now.getUTCHours())}${pad2(now.getUTCMinutes())}${pad2(now.getUTCSeconds())}`,
    13: `${pad2(now.getUTCMonth() + 1)}${pad2(now.getUTCDate())}`,
    32: o.acquirer,
    37: `SIM${stan}${f7.slice(7, 10)}`,
    41: 'SIMTERM1',
    42: 'SIMULATOR000001',
  };
  const cardFields: Record<number, string> = { 2: card.pan };

  if (o.type === 'clear' || o.type === 'reverse' || o.type === 'refund') {
    if (!svc) throw new Error('unreachable');
    const orig = await findOriginal(svc, o, card.id);
    if (o.type === 'clear') await refuseEmptyHold(svc, o, orig);
    const f49 = o.currency ? numericCurrency(o.currency) : (orig.fields['49'] ?? '978');
    const origAmount = Number(orig.fields['4'] ?? 0);
    const f90 = `${orig.mti.startsWith('02') ? orig.mti.slice(0, 3).concat('0') : '0100'}${orig.stan}${orig.transmitted}${orig.acquirer.padStart(11, '0')}${'0'.repeat(11)}`;
    const fields: Record<number, string> = { ...cardFields, ...common, 49: f49, 90: f90 };
    if (orig.fields['18']) fields[18] = orig.fields['18'];
    if (orig.fields['43']) fields[43] = orig.fields['43'];
    if (o.type === 'reverse') {
      fields[3] = orig.fields['3'] ?? '000000';
      fields[4] = String(origAmount).padStart(12, '0');
      if (o.amount !== undefined) {
        const reversing = Number(minorAmount(o.amount, f49));
        if (reversing > origAmount) throw new ConfigError(`--amount: at most the authorization's ${origAmount} minor units`);
        fields[95] = `${String(origAmount - reversing).padStart(12, '0')}${'0'.repeat(30)}`;
      }
      return { mti: o.mti ?? '0400', fields: new Map(Object.entries(fields).map(([k, v]) => [Number(k), v])) };
    }
    fields[3] = o.type === 'refund' ? '200000' : (orig.fields['3'] ?? '000000');
    fields[4] = o.amount !== undefined ? minorAmount(o.amount, f49) : String(origAmount).padStart(12, '0');
    return { mti: o.mti ?? '0220', fields: new Map(Object.entries(fields).map(([k, v]) => [Number(k), v])) };
  }

  if (!card.expiry) throw new ConfigError('--pan needs --expiry YYMM');
  const f49 = o.currency ? numericCurrency(o.currency) : (currencies[card.currency ?? 'EUR'] ?? '978');
  const processing = o.type === 'cash' ? '010000' : o.type === 'balance' ? '310000' : '000000';
  if (o.type !== 'balance' && o.amount === undefined) throw new ConfigError(`--type ${o.type} needs --amount`);
  const fields: Record<number, string> = {
    ...cardFields,
    3: processing,
    4: o.type === 'balance' ? '0'.repeat(12) : minorAmount(o.amount as string, f49),
    ...common,
    14: card.expiry,
    18: o.mcc,
    // E-commerce with the CVV2 (--card, or --pan with --cvv) or a 3-D Secure authentication value;
    // without either, credential on file (102), as a merchant's stored card: an e-commerce purchase
    // without a CVV2 is declined (decisions §12.13).
    22: o.type === 'cash' ? '051' : card.cvv || o.authenticationValue !== undefined ? '810' : '102',
    43: acceptor,
    49: f49,
  };
  const f48 = field48([
    ...(o.eci !== undefined ? [['42', o.eci] as const] : []),
    ...(o.authenticationValue !== undefined ? [['43', o.authenticationValue] as const] : []),
    ...(card.cvv ? [['92', card.cvv] as const] : []),
  ]);
  if (f48) fields[48] = f48;
  const mti = o.mti ?? (o.type === 'advice' ? '0120' : '0100');
  return { mti, fields: new Map(Object.entries(fields).map(([k, v]) => [Number(k), v])) };
}

/** Field 48 from its subelements (null when none); a value that breaks its subelement's format is the option's error. */
function field48(subelements: Array<readonly [string, string]>): string | null {
  if (subelements.length === 0) return null;
  try {
    return encodeField48(subelements);
  } catch (err) {
    if (!(err instanceof Field48Error)) throw err;
    const option = err.tag === '42' ? '--eci' : err.tag === '43' ? '--authentication-value' : '--cvv';
    throw new ConfigError(`${option}: ${err.reason} (field 48 subelement ${err.tag}, ${SUBELEMENTS[err.tag ?? '']?.name ?? ''})`);
  }
}

/** A message as it may be shown: PAN masked, CVV2, the authentication value and track/PIN/chip data never. */
export function shownFields(msg: IsoMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [f, v] of [...msg.fields].sort(([a], [b]) => a - b)) {
    if (f === 2) out[f] = maskedPan(v);
    else if (f === 48) {
      const sub = subelements(v);
      if (sub === null) continue;
      const rest = [...sub].filter(([tag]) => !SECRET_SUBELEMENTS.includes(tag)).map(([tag, s]) => `${tag}${pad2(s.length)}${s}`);
      const hidden = [...(sub.has('43') ? ['43 authentication value (not shown)'] : []), ...(sub.has('92') ? ['92 CVV2 (not shown)'] : [])];
      out[f] = [...rest, ...hidden].join(' ');
    } else if ([35, 45, 52, 55].includes(f)) out[f] = '(not shown)';
    else out[f] = v;
  }
  return out;
}

const MTI_NAMES: Record<string, string> = {
  '0100': 'authorization request',
  '0110': 'authorization response',
  '0120': 'authorization advice',
  '0130': 'authorization advice response',
  '0200': 'financial request',
  '0210': 'financial response',
  '0220': 'financial advice',
  '0230': 'financial advice response',
  '0400': 'reversal request',
  '0410': 'reversal response',
  '0420': 'reversal advice',
  '0430': 'reversal advice response',
  '0800': 'network management',
  '0810': 'network management response',
};

function showMessage(title: string, msg: IsoMessage): string {
  const lines = [`${title} ${msg.mti} ${MTI_NAMES[msg.mti] ?? ''}`.trimEnd()];
  for (const [f, v] of Object.entries(shownFields(msg))) {
    const name = (FIELDS[Number(f)] as FieldSpec).name;
    const note = f === '39' ? `  (${codeMeaning(v)})` : '';
    lines.push(`  ${f.padStart(3)}  ${name.padEnd(36)} ${v}${note}`);
  }
  return lines.join('\n');
}

function linkTarget(svc: Services | null, o: SendOptions) {
  const port =
    o.port ??
    svc?.config.network.port ??
    (process.env.CARDPROGRAM_NETWORK_PORT ? Number(process.env.CARDPROGRAM_NETWORK_PORT) : DEFAULT_LINK_PORT);
  if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new ConfigError('--port must be a port number (1 to 65535)');
  const envHost = process.env.CARDPROGRAM_NETWORK_HOST?.trim() || process.env.HOST?.trim();
  const host = o.host ?? (envHost && envHost !== '0.0.0.0' && envHost !== '::' ? envHost : '127.0.0.1');
  const given = [o.cert, o.key, o.ca].filter(Boolean).length;
  if (given > 0 && given < 3) throw new ConfigError('--cert, --key and --ca go together (TLS with a client certificate)');
  const tls =
    given === 3
      ? { cert: o.cert as string, key: o.key as string, ca: o.ca as string, ...(o.servername ? { servername: o.servername } : {}) }
      : null;
  return { host, port, tls };
}

export async function send(o: SendOptions): Promise<void> {
  if (!TYPES.includes(o.type)) throw new ConfigError(`--type must be one of ${TYPES.join(', ')}`);
  if (!o.card === !o.pan) throw new ConfigError('give --card CARD_ID or --pan PAN (with --expiry)');
  if (o.pan && !/^\d{12,19}$/.test(o.pan)) throw new ConfigError('--pan must be 12 to 19 digits');
  if (o.expiry) o.expiry = /^\d\d\/\d\d$/.test(o.expiry) ? `${o.expiry.slice(3)}${o.expiry.slice(0, 2)}` : o.expiry;
  if (o.expiry && !/^\d{4}$/.test(o.expiry)) throw new ConfigError('--expiry must be YYMM (or MM/YY)');
  if (o.mti && !/^\d{4}$/.test(o.mti)) throw new ConfigError('--mti must be 4 digits');
  if ((o.eci !== undefined || o.authenticationValue !== undefined) && !['purchase', 'cash', 'advice'].includes(o.type))
    throw new ConfigError(`--eci and --authentication-value go with a purchase (--type ${o.type} carries none)`);
  const needsDb = !!o.card || ['clear', 'reverse', 'refund'].includes(o.type);
  const go = async (svc: Services | null) => {
    const request = await buildMessage(svc, o);
    if (o.write) {
      appendFileSync(o.write, clearingFile([request]));
      print(
        !!o.json,
        { written: o.write, request: { mti: request.mti, fields: shownFields(request) } },
        () => `${showMessage('written to', request).replace(/^written to /, `written to ${o.write}: `)}`,
      );
      return;
    }
    const target = linkTarget(svc, o);
    const client = await LinkClient.connect(target);
    const started = performance.now();
    let answer: IsoMessage;
    try {
      answer = await client.ask(request, o.timeout);
    } finally {
      client.close();
    }
    const ms = Math.round(performance.now() - started);
    const code = answer.fields.get(39);
    const made = code === ResponseCode.approved ? await madeTrade(svc, request) : null;
    print(
      !!o.json,
      {
        link: `${target.host}:${target.port}`,
        tls: target.tls !== null,
        request: { mti: request.mti, fields: shownFields(request) },
        answer: { mti: answer.mti, fields: shownFields(answer) },
        code: code ?? null,
        meaning: codeMeaning(code),
        approved: code === ResponseCode.approved,
        tradeId: made?.tradeId ?? null,
        originalId: made?.originalId ?? null,
        forced: made?.forced ?? false,
        ms,
      },
      () =>
        [
          showMessage(`sent to ${target.host}:${target.port}${target.tls ? ' (TLS)' : ''}:`, request),
          showMessage(`received in ${ms} ms:`, answer),
          `${code ?? '--'} ${codeMeaning(code)}`,
          ...(made ? [madeLine(made)] : []),
        ].join('\n'),
    );
    if (code !== ResponseCode.approved) {
      if (!o.json) process.stderr.write(`cardprogram: answered ${code ?? 'without field 39'}: ${codeMeaning(code)}\n`);
      process.exitCode = 2;
    }
  };
  if (needsDb) await withServices(go);
  else await go(null);
}
