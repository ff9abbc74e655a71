/**
 * Secrets hygiene over the whole suite (issue 8). `npm test` (scripts/test.mjs) sets
 * CARDPROGRAM_TEST_LOG_DIR: then every app the tests build logs at trace level with the production
 * logger into that folder, every service and command the tests start adds its log output, every
 * error reply the in-process harness receives is written there too, and every secret the tests
 * are handed (full card numbers, CVVs, merchant and webhook secrets, page-link tokens) is noted.
 * After the suite, scripts/audit-logs.ts scans it all (scanLogs, below) and fails the run on a find.
 */
import { mkdirSync, openSync, readdirSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { BuildOptions } from '../../src/app.js';
import { isLuhnValid } from '../../src/cards/card-number.js';

const DIR = process.env.CARDPROGRAM_TEST_LOG_DIR;

export const auditing = DIR !== undefined && DIR !== '';

let seq = 0;
function file(kind: string): string {
  mkdirSync(DIR as string, { recursive: true });
  return join(DIR as string, `${kind}-${process.pid}-${++seq}.log`);
}

// One descriptor per file, kept open for the process's life: a trace-level suite writes many lines.
const fds = new Map<string, number>();
function append(path: string, text: string): void {
  let fd = fds.get(path);
  if (fd === undefined) {
    mkdirSync(DIR as string, { recursive: true });
    fd = openSync(path, 'a');
    fds.set(path, fd);
  }
  writeSync(fd, text);
}

/** Logging for an app a test builds: the production logger at trace level into the audit folder. */
export function testLogging(): Pick<BuildOptions, 'logger' | 'logStream'> {
  if (!auditing) return { logger: false };
  const path = file('app');
  return { logStream: { write: (line: string) => append(path, line) } };
}

/** The level tests run apps at: trace while auditing, so that every line the code can write is written. */
export const testLogLevel = auditing ? 'trace' : 'silent';

/** Keeps what a service, a command or an error reply printed, for the scan. */
export function keepOutput(kind: string, text: string): void {
  if (!auditing || text === '') return;
  append(join(DIR as string, `${kind}-${process.pid}.log`), text.endsWith('\n') ? text : `${text}\n`);
}

/** Notes a secret a test was handed, so the scan looks for it by value. */
export function noteSecret(kind: SecretKind, value: unknown): void {
  if (!auditing || typeof value !== 'string' || value === '') return;
  append(join(DIR as string, `secrets-${process.pid}.jsonl`), `${JSON.stringify({ kind, value })}\n`);
}

/**
 * `otp`: a 3-D Secure one-time code a test received in its threeDs.otp callback (looked for beside a
 * code's name, as a CVV). `authentication-value`: a 3-D Secure authentication value an ARes gave
 * (a one-time credential: never in a log).
 */
export type SecretKind = 'pan' | 'cvv' | 'merchant-secret' | 'webhook-secret' | 'page-token' | 'otp' | 'authentication-value';

/** Notes the secrets in an API reply: a full card number and CVV (sandbox card details), a page link's token. */
export function noteReplySecrets(body: unknown): void {
  if (!auditing || typeof body !== 'object' || body === null) return;
  const model = (body as { model?: Record<string, unknown> }).model;
  if (model && typeof model === 'object') {
    if (typeof model.cardNo === 'string' && /^\d{13,19}$/.test(model.cardNo)) noteSecret('pan', model.cardNo);
    noteSecret('cvv', model.cvv);
    if (typeof model.webUrl === 'string') noteSecret('page-token', /[?&]token=([^&#]+)/.exec(model.webUrl)?.[1]);
  }
}

export interface Finding {
  file: string;
  line: number;
  kind: string;
  excerpt: string;
}

/** What a secret looks like even when no test noted it. */
const SHAPES: Array<[string, RegExp]> = [
  ['merchant-secret', /\bsk_(?:test|live)_[0-9a-f]{32}\b/],
  ['webhook-secret', /\bwhsec_[A-Za-z0-9+/=]{20,}/],
  ['cvv', /\bcvv2?\\?"?\s*[:=]\s*\\?"?\d{3,4}\b/i],
];

/** A log line with %XX decoded and + read as a space, as often as that changes it (at most 4 times). */
function decodedLine(line: string): string {
  let s = line;
  for (let i = 0; i < 4; i++) {
    const d = s.replace(/\+/g, ' ').replace(/%([0-9a-fA-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
    if (d === s) break;
    s = d;
  }
  return s;
}

/**
 * Scans every log file in dir for the noted secrets (by value) and for secrets' shapes: merchant
 * and webhook secrets, a CVV next to its name, and card numbers (13 to 19 digits, alone or in
 * groups of four, passing the Luhn check and starting with one of `bins`), also percent-encoded.
 */
export function scanLogs(dir: string, bins: readonly string[]): { files: number; bytes: number; secrets: number; findings: Finding[] } {
  const names = readdirSync(dir);
  const known = new Map<string, string>();
  const cvvs = new Set<string>();
  const otps = new Set<string>();
  for (const name of names.filter((n) => n.startsWith('secrets-'))) {
    for (const line of readFileSync(join(dir, name), 'utf8').split('\n')) {
      if (!line) continue;
      const { kind, value } = JSON.parse(line) as { kind: SecretKind; value: string };
      if (kind === 'cvv') cvvs.add(value);
      else if (kind === 'otp') otps.add(value);
      else known.set(value, kind);
    }
  }
  const findings: Finding[] = [];
  let bytes = 0;
  const logs = names.filter((n) => n.endsWith('.log'));
  for (const name of logs) {
    const text = readFileSync(join(dir, name), 'utf8');
    bytes += text.length;
    text.split('\n').forEach((line, i) => {
      const found = (kind: string, at: number) =>
        findings.push({ file: name, line: i + 1, kind, excerpt: line.slice(Math.max(0, at - 60), at + 80) });
      for (const [kind, re] of SHAPES) {
        const m = re.exec(line);
        if (m) found(kind, m.index);
      }
      // A card number inside a URL is percent-encoded, maybe twice (a console redirect's `next`
      // holds a whole URL): the line is looked at as it is and decoded.
      const decoded = decodedLine(line);
      const panAt = new Set<number>();
      for (const text of decoded === line ? [line] : [line, decoded]) {
        // Not the fraction of a number (`"responseTime":41.42424299999948`): a card number never follows "digit.".
        for (const m of text.matchAll(/(?<!\d\.)\d{4}(?:[ .-]?\d){9,15}/g)) {
          const digits = m[0].replace(/[ .-]/g, '');
          if (
            digits.length >= 13 &&
            digits.length <= 19 &&
            (known.get(digits) === 'pan' || (bins.some((b) => digits.startsWith(b)) && isLuhnValid(digits)))
          )
            panAt.add(text === line ? (m.index ?? 0) : -1);
        }
      }
      if (panAt.size > 0) found('pan', Math.max(0, Math.min(...panAt)));
      for (const m of line.matchAll(/[A-Za-z0-9_-]{20,}/g)) {
        const kind = known.get(m[0]);
        if (kind && kind !== 'pan') found(kind, m.index ?? 0);
      }
      for (const m of line.matchAll(/\bcvv\D{0,6}(\d{3,4})\b/gi)) if (cvvs.has(m[1] ?? '')) found('cvv', m.index ?? 0);
      // A one-time code is six digits, as plenty else is: it counts beside a name that says code or otp.
      for (const m of line.matchAll(/\b(?:code|otp)\D{0,6}(\d{6})\b/gi)) if (otps.has(m[1] ?? '')) found('otp', m.index ?? 0);
    });
  }
  return { files: logs.length, bytes, secrets: known.size + cvvs.size + otps.size, findings };
}
