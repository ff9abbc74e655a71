import { type Kysely, sql } from 'kysely';
import type { Database } from './index.js';
import * as m0001 from './migrations/2026_11_22_0001_initial.js';
import * as m0002 from './migrations/2026_11_22_0002_cards_ledger.js';
import * as m0003 from './migrations/2026_11_22_0003_kyc_callbacks.js';
import * as m0004 from './migrations/2026_11_22_0004_page.js';
import * as m0005 from './migrations/2026_11_22_0005_page_domains.js';
import * as m0006 from './migrations/2026_11_22_0006_rate_limits.js';
import * as m0007 from './migrations/2026_11_23_0007_holder_identity_sealed.js';
import * as m0008 from './migrations/2026_11_23_0008_card_status_source.js';
import * as m0009 from './migrations/2026_11_23_0009_funding_and_limits.js';
import * as m0010 from './migrations/2026_11_24_0010_authorizations.js';
import * as m0011 from './migrations/2026_11_24_0011_controls_and_endpoint.js';
import * as m0012 from './migrations/2026_11_24_0012_audit.js';
import * as m0013 from './migrations/2026_11_24_0013_operators.js';
import * as m0014 from './migrations/2026_11_24_0014_trades_partitioned.js';
import * as m0015 from './migrations/2026_11_25_0015_kyc_email_sealed_credential_gen.js';
import * as m0016 from './migrations/2026_11_25_0016_console_login_throttle.js';
import * as m0017 from './migrations/2026_11_25_0017_money_accounted.js';
import * as m0018 from './migrations/2026_11_25_0018_callback_endpoints.js';
import * as m0019 from './migrations/2026_11_25_0019_network_messages.js';
import * as m0020 from './migrations/2026_11_25_0020_login_refusals_counted.js';
import * as m0021 from './migrations/2026_11_25_0021_card_debt.js';
import * as m0022 from './migrations/2026_11_25_0022_disputes.js';
import * as m0023 from './migrations/2026_11_25_0023_read_nonces_unlogged.js';
import * as m0024 from './migrations/2026_11_25_0024_network_overview.js';
import * as m0025 from './migrations/2026_11_27_0025_card_verification.js';
import * as m0027 from './migrations/2026_11_27_0027_network_exceptions.js';
import * as m0028 from './migrations/2026_11_27_0028_callback_fairness_sweeps.js';
import * as m0029 from './migrations/2026_11_27_0029_three_ds.js';
import * as m0030 from './migrations/2026_11_27_0030_link_attack_fixes.js';
import * as m0033 from './migrations/2026_11_27_0033_three_ds_created.js';
import * as m0034 from './migrations/2026_11_27_0034_tokens.js';
import * as m0035 from './migrations/2026_11_27_0035_tsp_call_attempts.js';
import * as m0036 from './migrations/2026_11_27_0036_authorization_tokens.js';

interface Migration {
  up(db: Kysely<any>): Promise<void>;
}

/**
 * Migrations are imported, not read from a folder, so the compiled service and the tests run the
 * same list. Names are dated; they apply in this order, each exactly once.
 */
export const MIGRATIONS: ReadonlyArray<[string, Migration]> = [
  ['2026_11_22_0001_initial', m0001],
  ['2026_11_22_0002_cards_ledger', m0002],
  ['2026_11_22_0003_kyc_callbacks', m0003],
  ['2026_11_22_0004_page', m0004],
  ['2026_11_22_0005_page_domains', m0005],
  ['2026_11_22_0006_rate_limits', m0006],
  ['2026_11_23_0007_holder_identity_sealed', m0007],
  ['2026_11_23_0008_card_status_source', m0008],
  ['2026_11_23_0009_funding_and_limits', m0009],
  ['2026_11_24_0010_authorizations', m0010],
  ['2026_11_24_0011_controls_and_endpoint', m0011],
  ['2026_11_24_0012_audit', m0012],
  ['2026_11_24_0013_operators', m0013],
  ['2026_11_24_0014_trades_partitioned', m0014],
  ['2026_11_25_0015_kyc_email_sealed_credential_gen', m0015],
  ['2026_11_25_0016_console_login_throttle', m0016],
  ['2026_11_25_0017_money_accounted', m0017],
  ['2026_11_25_0018_callback_endpoints', m0018],
  ['2026_11_25_0019_network_messages', m0019],
  ['2026_11_25_0020_login_refusals_counted', m0020],
  ['2026_11_25_0021_card_debt', m0021],
  ['2026_11_25_0022_disputes', m0022],
  ['2026_11_25_0023_read_nonces_unlogged', m0023],
  ['2026_11_25_0024_network_overview', m0024],
  ['2026_11_27_0025_card_verification', m0025],
  ['2026_11_27_0027_network_exceptions', m0027],
  ['2026_11_27_0028_callback_fairness_sweeps', m0028],
  ['2026_11_27_0029_three_ds', m0029],
  ['2026_11_27_0030_link_attack_fixes', m0030],
  ['2026_11_27_0033_three_ds_created', m0033],
  ['2026_11_27_0034_tokens', m0034],
  ['2026_11_27_0035_tsp_call_attempts', m0035],
  ['2026_11_27_0036_authorization_tokens', m0036],
];

/**
 * Whether every migration is recorded, in one read: the common case at every start, which then
 * takes no lock and writes nothing. Any failure (no table yet, among others) says "not known to be
 * current", and the locked path below finds out, or fails with the error that matters.
 */
export async function isCurrent(database: Database): Promise<boolean> {
  try {
    const { rows } = await sql<{ name: string }>`select name from cardprogram_migrations`.execute(database.db);
    const done = new Set(rows.map((r) => r.name));
    return MIGRATIONS.every(([name]) => done.has(name));
  } catch {
    return false;
  }
}

/**
 * Applies pending migrations in one transaction. On PostgreSQL an advisory lock serialises
 * instances starting together; on SQLite the write lock does. No catalogue introspection: the
 * ledger table is looked up in the connection's own schema only.
 */
export async function migrateToLatest(database: Database): Promise<string[]> {
  if (await isCurrent(database)) return [];
  return database.withTx(async (tx) => {
    if (database.dialect === 'postgres') {
      await sql`select pg_advisory_xact_lock(hashtext('cardprogram_migrations'))`.execute(tx);
    }
    await tx.schema
      .createTable('cardprogram_migrations')
      .ifNotExists()
      .addColumn('name', 'varchar(128)', (c) => c.primaryKey())
      .addColumn('applied_at', 'bigint', (c) => c.notNull())
      .execute();
    const done = new Set(
      (await (tx as Kysely<any>).selectFrom('cardprogram_migrations').select('name').execute()).map((r: { name: string }) => r.name),
    );
    const applied: string[] = [];
    for (const [name, migration] of MIGRATIONS) {
      if (done.has(name)) continue;
      await migration.up(tx);
      await (tx as Kysely<any>).insertInto('cardprogram_migrations').values({ name, applied_at: Date.now() }).execute();
      applied.push(name);
    }
    return applied;
  });
}
