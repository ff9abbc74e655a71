import { type Kysely, sql } from 'kysely';

// Frozen in time: a migration is never edited after it has shipped; later changes get a new file.
/** src/callbacks/endpoint.ts as it is today (a migration does not follow later changes). */
function endpointOf(url: string): string {
  try {
    const origin = new URL(url).origin;
    if (origin && origin !== 'null') return origin.slice(0, 300);
  } catch {}
  return url.slice(0, 300);
}

export async function up(db: Kysely<any>): Promise<void> {
  // Which receiver an event goes to: the origin of its URL (scheme, host, port). The worker takes
  // due events round-robin by (merchant, endpoint), bounds the attempts in flight per endpoint, and
  // keeps a circuit breaker per endpoint (docs/callbacks.md, "Isolation").
  await db.schema
    .alterTable('callback_events')
    .addColumn('endpoint', 'varchar(300)', (c) => c.notNull().defaultTo(''))
    .execute();
  // The events still to deliver (delivered ones keep '': the worker reads an event's endpoint from
  // its URL when it claims one, and writes it with the attempt). Few distinct URLs (a merchant's
  // notify URL, its KYC callback URLs): one update per URL.
  const { rows } = await sql<{ url: string }>`select distinct url from callback_events where status <> 'delivered'`.execute(db);
  for (const { url } of rows) {
    await db
      .updateTable('callback_events')
      .set({ endpoint: endpointOf(url) })
      .where('url', '=', url)
      .where('status', '<>', 'delivered')
      .execute();
  }
  await db.schema
    .createIndex('callback_events_endpoint')
    .on('callback_events')
    .columns(['merchant_id', 'endpoint', 'status', 'next_attempt_at'])
    .execute();

  // A circuit breaker per endpoint, shared by every worker on the database. `closed`: attempts go
  // as the retry schedule says, `failures` counts consecutive attempts that got no answer. `open`:
  // the endpoint's events are deferred (not attempted, not counted) until `open_until`; then one
  // worker takes the probe (`probe_owner` until `probe_until`) and sends one event.
  await db.schema
    .createTable('callback_endpoints')
    .addColumn('merchant_id', 'varchar(32)', (c) => c.notNull())
    .addColumn('endpoint', 'varchar(300)', (c) => c.notNull())
    .addColumn('state', 'varchar(16)', (c) => c.notNull())
    .addColumn('failures', 'integer', (c) => c.notNull())
    .addColumn('trips', 'integer', (c) => c.notNull())
    .addColumn('opened_at', 'bigint')
    .addColumn('open_until', 'bigint')
    .addColumn('probe_owner', 'varchar(40)')
    .addColumn('probe_until', 'bigint')
    .addColumn('last_error', 'text')
    .addColumn('changed_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('callback_endpoints_pk', ['merchant_id', 'endpoint'])
    .execute();
  await db.schema.createIndex('callback_endpoints_state').on('callback_endpoints').columns(['state', 'open_until']).execute();
}
