import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export type Environment = 'sandbox' | 'production';

/** The service's whole configuration, read from the environment once (decisions §1). */
export interface Config {
  port: number;
  host: string;
  databaseUrl: string;
  env: Environment;
  publicUrl: string;
  dataDir: string;
  /** 32 bytes; encrypts stored secrets (and, later, PAN data keys). */
  masterKey: Buffer;
  logLevel: string;
  /** How long a randomStr is remembered (decisions §4 says at least 24 h). */
  idempotencyRetentionMs: number;
  /** How long a merchant's credentials are cached in memory before being read again. */
  merchantCacheMs: number;
  /** Create the demo merchant on first start (sandbox only). */
  demoMerchant: boolean;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Record<string, string | undefined>;

function intVar(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

/**
 * Decodes CARDPROGRAM_MASTER_KEY: 64 hex characters or Base64 of 32 bytes. Why it is mandatory in
 * production: a generated key beside the database protects nothing if the disk is copied.
 */
export function parseMasterKey(raw: string): Buffer {
  const text = raw.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64');
  if (key.length !== 32) {
    throw new ConfigError('CARDPROGRAM_MASTER_KEY must be 32 bytes, as 64 hex characters or Base64');
  }
  return key;
}

function sandboxMasterKey(dataDir: string): Buffer {
  const file = join(dataDir, 'master.key');
  if (existsSync(file)) return parseMasterKey(readFileSync(file, 'utf8'));
  mkdirSync(dataDir, { recursive: true });
  const key = randomBytes(32);
  writeFileSync(file, `${key.toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  return key;
}

export function loadConfig(env: Env = process.env): Config {
  const envName = env.CARDPROGRAM_ENV || 'sandbox';
  if (envName !== 'sandbox' && envName !== 'production') {
    throw new ConfigError(`CARDPROGRAM_ENV must be "sandbox" or "production", got "${envName}"`);
  }
  const port = intVar(env, 'PORT', 8080, 0, 65535);
  const host = env.HOST || '127.0.0.1';
  const dataDir = resolve(env.CARDPROGRAM_DATA_DIR || './data');
  const databaseUrl = env.DATABASE_URL || `file:${join(dataDir, 'cardprogram.sqlite')}`;
  if (!/^(file:|postgres:\/\/|postgresql:\/\/)/.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must start with file: (SQLite) or postgres:// (PostgreSQL)');
  }
  const publicUrl = (env.CARDPROGRAM_PUBLIC_URL || `http://${host.includes(':') ? `[${host}]` : host}:${port}`).replace(/\/+$/, '');
  try {
    new URL(publicUrl);
  } catch {
    throw new ConfigError(`CARDPROGRAM_PUBLIC_URL is not a URL: "${publicUrl}"`);
  }
  let masterKey: Buffer;
  if (env.CARDPROGRAM_MASTER_KEY) masterKey = parseMasterKey(env.CARDPROGRAM_MASTER_KEY);
  else if (envName === 'production') throw new ConfigError('CARDPROGRAM_MASTER_KEY is required in production');
  else masterKey = sandboxMasterKey(dataDir);

  return {
    port,
    host,
    databaseUrl,
    env: envName,
    publicUrl,
    dataDir,
    masterKey,
    logLevel: env.LOG_LEVEL || 'info',
    idempotencyRetentionMs: intVar(env, 'CARDPROGRAM_IDEMPOTENCY_RETENTION_HOURS', 48, 24, 24 * 365) * 3_600_000,
    merchantCacheMs: intVar(env, 'CARDPROGRAM_MERCHANT_CACHE_MS', 5000, 0, 600_000),
    demoMerchant: envName === 'sandbox' && env.CARDPROGRAM_DEMO_MERCHANT !== 'off',
  };
}
