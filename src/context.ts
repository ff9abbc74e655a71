import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { PanVault } from './cards/vault.js';
import type { Config } from './config.js';
import type { SecretBox } from './crypto/secretbox.js';
import type { Database } from './db/index.js';
import type { DB } from './db/schema.js';
import type { DomainDirectory } from './domains/directory.js';
import type { MerchantDirectory } from './merchants/directory.js';

/** What every verb may use: the service's long-lived parts. Built once in src/app.ts or the CLI. */
export interface Services {
  config: Config;
  database: Database;
  box: SecretBox;
  merchants: MerchantDirectory;
  /** Merchants' own host names for the card page, with their TLS contexts. */
  domains: DomainDirectory;
  vault: PanVault;
  log: FastifyBaseLogger;
  clock: () => number;
  /** Told after a commit that may have written callback events; the in-process worker listens. */
  notifier: { poke(): void };
}

/** A verb's view of one unit of work: the open transaction and the moment it happens. */
export interface TxCtx {
  tx: Kysely<DB>;
  now: number;
}
