import { createPrivateKey, X509Certificate } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import type { Kysely } from 'kysely';
import type { Services, VerbCtx } from '../context.js';
import type { DB } from '../db/schema.js';
import { invalid } from '../errors.js';

/** A merchant's own host name for the card page, as the operator sees it (never the key). */
export interface DomainSummary {
  host: string;
  appId: string;
  /** Whether the service itself serves HTTPS for this host (it holds a certificate). */
  tls: boolean;
  certExpiresAt: string | null;
  createdAt: string;
}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** Lower case, no trailing dot, a DNS name of at least two labels; no IP address, no wildcard. */
export function normalizeHost(raw: string): string {
  const host = raw.trim().toLowerCase().replace(/\.$/, '');
  const labels = host.split('.');
  if (host.length > 253 || labels.length < 2 || !labels.every((l) => LABEL.test(l)) || /^\d+$/.test(labels.at(-1) ?? '')) {
    throw invalid('host', `"${raw}" is not a host name such as cards.example.com (no IP address, port or wildcard)`);
  }
  return host;
}

const keyContext = (host: string) => `domain-key:${host}`;

/**
 * Checks a certificate and key before they are stored: both parse, the key is the certificate's,
 * the certificate names the host and has not expired, and TLS can load the pair (with its chain).
 */
function checkCertificate(host: string, certPem: string, keyPem: string, now: number): { notAfter: number } {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
  } catch {
    throw invalid('cert', 'is not a PEM certificate');
  }
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey(keyPem);
  } catch {
    throw invalid('key', 'is not a PEM private key (an encrypted key must be decrypted first)');
  }
  if (!cert.checkPrivateKey(key)) throw invalid('key', 'does not belong to the certificate');
  if (!cert.checkHost(host)) throw invalid('cert', `does not name ${host} (subject ${cert.subject.replace(/\n/g, ', ')})`);
  const notAfter = Date.parse(cert.validTo);
  if (!(notAfter > now)) throw invalid('cert', `expired on ${cert.validTo}`);
  try {
    createSecureContext({ cert: certPem, key: keyPem });
  } catch (err) {
    throw invalid('cert', `cannot be used for TLS: ${(err as Error).message}`);
  }
  return { notAfter };
}

export interface AddDomainInput {
  appId: string;
  host: string;
  certPem?: string;
  keyPem?: string;
}

/**
 * Maps a host to a merchant (the operator's `cardprogram domain add`). With a certificate and key,
 * the service serves HTTPS for the host itself (by SNI); without, TLS is ended in front of it.
 * Adding a host the merchant already has replaces its certificate; a host of another merchant is refused.
 */
export async function addDomain({ ctx, input }: { ctx: VerbCtx; input: AddDomainInput }): Promise<DomainSummary> {
  const { tx, now } = ctx;
  const host = normalizeHost(input.host);
  if ((input.certPem === undefined) !== (input.keyPem === undefined)) throw invalid('cert', 'and key go together: give both or neither');
  const checked =
    input.certPem !== undefined && input.keyPem !== undefined ? checkCertificate(host, input.certPem, input.keyPem, now) : null;
  const merchant = await tx.selectFrom('merchants').select('id').where('id', '=', input.appId).executeTakeFirst();
  if (!merchant) throw invalid('merchant', `no merchant ${input.appId}`);
  const existing = await tx.selectFrom('merchant_domains').selectAll().where('host', '=', host).executeTakeFirst();
  if (existing && existing.merchant_id !== input.appId)
    throw invalid('host', `${host} is already mapped to merchant ${existing.merchant_id}`);
  const values = {
    merchant_id: input.appId,
    cert_pem: input.certPem ?? null,
    key_enc: input.keyPem !== undefined ? ctx.svc.box.seal(input.keyPem, keyContext(host)) : null,
    cert_not_after: checked?.notAfter ?? null,
  };
  if (existing) await tx.updateTable('merchant_domains').set(values).where('host', '=', host).execute();
  else
    await tx
      .insertInto('merchant_domains')
      .values({ host, ...values, created_at: now })
      .execute();
  return summary({ host, ...values, created_at: existing?.created_at ?? now });
}

/** The mapped hosts, of one merchant or of all (a read: no transaction of its own). */
export async function listDomains(db: Kysely<DB>, appId?: string): Promise<DomainSummary[]> {
  let q = db.selectFrom('merchant_domains').selectAll().orderBy('merchant_id').orderBy('host');
  if (appId !== undefined) q = q.where('merchant_id', '=', appId);
  return (await q.execute()).map(summary);
}

export async function removeDomain({ ctx, input }: { ctx: VerbCtx; input: { host: string } }): Promise<DomainSummary> {
  const { tx } = ctx;
  const host = normalizeHost(input.host);
  const row = await tx.selectFrom('merchant_domains').selectAll().where('host', '=', host).executeTakeFirst();
  if (!row) throw invalid('host', `${host} is not mapped`);
  await tx.deleteFrom('merchant_domains').where('host', '=', host).execute();
  return summary(row);
}

function summary(row: {
  host: string;
  merchant_id: string;
  cert_pem: string | null;
  cert_not_after: number | null;
  created_at: number;
}): DomainSummary {
  return {
    host: row.host,
    appId: row.merchant_id,
    tls: row.cert_pem !== null,
    certExpiresAt: row.cert_not_after === null ? null : new Date(Number(row.cert_not_after)).toISOString(),
    createdAt: new Date(Number(row.created_at)).toISOString(),
  };
}

/** The stored key of a host, decrypted (for the TLS server only). */
export function openDomainKey(svc: Services, host: string, keyEnc: string): string {
  return svc.box.open(keyEnc, keyContext(host));
}
