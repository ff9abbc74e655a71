import type { FastifyBaseLogger } from 'fastify';
import type { Config } from './config.js';
import type { Services } from './context.js';
import { SecretBox } from './crypto/secretbox.js';
import type { Database } from './db/index.js';
import type { ReplicaRouter } from './db/replica.js';
import { DomainDirectory } from './directories/domains.js';
import { MerchantDirectory } from './directories/merchants.js';
import { sealPlaintextHolders } from './holders/identity.js';
import { sealPlaintextKyc } from './kyc/email.js';
import { Metrics } from './metrics.js';
import { tokensFollowCard } from './tokens/card-life.js';
import { PanVault } from './vault/pan-vault.js';

/** The long-lived parts every verb uses, for the HTTP app and the CLI alike (which reads the primary only). */
export function createServices(
  config: Config,
  database: Database,
  log: FastifyBaseLogger,
  clock: () => number = Date.now,
  replica: ReplicaRouter | null = null,
): Services {
  const box = new SecretBox(config.masterKey, config.masterKeyPrevious);
  const metrics = new Metrics();
  database.observer = metrics;
  return {
    config,
    database,
    reads: () => replica?.db() ?? database.db,
    replica,
    box,
    merchants: new MerchantDirectory(database, box, config.merchantCacheMs, clock),
    domains: new DomainDirectory(database, box, config.merchantCacheMs, clock),
    vault: new PanVault(box, clock),
    log,
    clock,
    notifier: { poke: () => undefined },
    metrics,
    // Set by the HTTP app (src/app.ts), which serves the reads.
    readNonces: null,
    // A card's freeze, unfreeze and close reach its wallet tokens (decisions §15.4).
    cardLife: tokensFollowCard,
  };
}

/**
 * The step every entry point (the server, `serve --processes`, the worker, a CLI command) takes
 * after migrating and before its first read: the vault's data keys exist, and identity data that
 * an older version stored in clear is sealed. Each part is idempotent and cheap when there is
 * nothing to do.
 */
export async function readyVault(svc: Services): Promise<void> {
  await svc.vault.ensureKeys(svc.database.db);
  await sealPlaintextHolders(svc);
  await sealPlaintextKyc(svc);
}
