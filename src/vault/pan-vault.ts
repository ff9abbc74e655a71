import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { SecretBox } from '../crypto/secretbox.js';
import type { DB } from '../db/schema.js';

/** '3ds': the ACS's key (authentication values and one-time codes, src/three-ds/keys.ts). */
type Purpose = 'pan' | 'pan-hash' | 'cvv' | 'holder-hash' | '3ds';

/** The purposes whose key `keys rotate` renews: new values under the new version, old ones keep theirs. */
export const ROTATABLE = ['pan', '3ds'] as const;
export type RotatablePurpose = (typeof ROTATABLE)[number];

interface DataKey {
  id: string;
  key: Buffer;
}

/**
 * The PAN vault. A card number exists in plain text only in memory, while a card is issued and when
 * the sandbox card-details operation or the cardholder page reveals it. At rest it is
 * AES-256-GCM ciphertext under a data key (the key id is stored beside it, so keys can rotate), and
 * a keyed hash (HMAC-SHA256) to find a card by its number. The CVV is never stored: it is derived
 * from the PAN and expiry under a separate key whenever it is shown.
 * Data keys are random, sealed under the master key, and cached in memory once opened.
 */
export class PanVault {
  private readonly keys = new Map<string, DataKey>();
  private readonly newest = new Map<Purpose, { key: DataKey; at: number }>();

  constructor(
    private readonly box: SecretBox,
    private readonly clock: () => number = Date.now,
    /** How long the newest key of a purpose is trusted before checking for a rotation. */
    private readonly refreshMs = 60_000,
  ) {}

  private open(row: { id: string; key_enc: string }): DataKey {
    const cached = this.keys.get(row.id);
    if (cached) return cached;
    const key = { id: row.id, key: Buffer.from(this.box.open(row.key_enc, `data-key:${row.id}`), 'base64') };
    this.keys.set(row.id, key);
    return key;
  }

  /**
   * Creates version 1 of every key on a new database. Called at start, outside any business
   * transaction: a key created inside one that then rolled back would be cached here yet lost on
   * disk, and everything encrypted under it with it.
   */
  async ensureKeys(db: Kysely<DB>): Promise<void> {
    for (const purpose of ['pan', 'pan-hash', 'cvv', 'holder-hash', '3ds'] as const) {
      const row = await db.selectFrom('data_keys').select('id').where('purpose', '=', purpose).limit(1).executeTakeFirst();
      if (!row) await this.insertVersion(db, purpose, 1);
      // Opening the key now proves the master key is the one this database was sealed with.
      await this.currentKey(db, purpose);
    }
  }

  /** The newest key of a purpose (cached; re-read after refreshMs to see a rotation). */
  async currentKey(db: Kysely<DB>, purpose: Purpose): Promise<DataKey> {
    const hit = this.newest.get(purpose);
    if (hit && this.clock() - hit.at < this.refreshMs) return hit.key;
    const row = await db
      .selectFrom('data_keys')
      .select(['id', 'key_enc'])
      .where('purpose', '=', purpose)
      .orderBy('version', 'desc')
      .limit(1)
      .executeTakeFirst();
    if (!row) throw new Error(`no ${purpose} data key: the vault was not initialised (ensureKeys)`);
    const key = this.open(row);
    this.newest.set(purpose, { key, at: this.clock() });
    return key;
  }

  private async insertVersion(db: Kysely<DB>, purpose: Purpose, version: number): Promise<void> {
    const id = `dk_${purpose}_v${version}`;
    await db
      .insertInto('data_keys')
      .values({
        id,
        purpose,
        version,
        key_enc: this.box.seal(randomBytes(32).toString('base64'), `data-key:${id}`),
        created_at: this.clock(),
      })
      .onConflict((oc) => oc.doNothing())
      .execute();
  }

  /**
   * Every data key's id, purpose, version and age, and whether it is its purpose's current one (the
   * newest version, which new values are sealed under): never the key.
   */
  async listKeys(db: Kysely<DB>): Promise<Array<{ id: string; purpose: string; version: number; createdAt: string; current: boolean }>> {
    const rows = await db
      .selectFrom('data_keys')
      .select(['id', 'purpose', 'version', 'created_at'])
      .orderBy('purpose')
      .orderBy('version')
      .execute();
    const newest = new Map<string, number>();
    for (const k of rows) newest.set(k.purpose, Math.max(newest.get(k.purpose) ?? 0, k.version));
    return rows.map((k) => ({
      id: k.id,
      purpose: k.purpose,
      version: k.version,
      createdAt: new Date(Number(k.created_at)).toISOString(),
      current: newest.get(k.purpose) === k.version,
    }));
  }

  /** Adds a new version of a key (the PAN's, the ACS's): new values use it, old ones keep theirs. */
  async rotate(db: Kysely<DB>, purpose: RotatablePurpose = 'pan'): Promise<string> {
    const current = await db
      .selectFrom('data_keys')
      .select('version')
      .where('purpose', '=', purpose)
      .orderBy('version', 'desc')
      .limit(1)
      .executeTakeFirst();
    const version = (current?.version ?? 0) + 1;
    await this.insertVersion(db, purpose, version);
    this.newest.delete(purpose);
    return `dk_${purpose}_v${version}`;
  }

  private async keyById(db: Kysely<DB>, id: string): Promise<DataKey> {
    const cached = this.keys.get(id);
    if (cached) return cached;
    return this.open(await db.selectFrom('data_keys').select(['id', 'key_enc']).where('id', '=', id).executeTakeFirstOrThrow());
  }

  /**
   * A versioned key of a rotatable purpose, for values that name the version they were made under
   * (the ACS's authentication values): the current one, or the given version's. Never leaves memory.
   */
  async versionedKey(db: Kysely<DB>, purpose: RotatablePurpose, version?: number): Promise<{ version: number; key: Buffer }> {
    const k = version === undefined ? await this.currentKey(db, purpose) : await this.keyById(db, `dk_${purpose}_v${version}`);
    return { version: Number(k.id.slice(k.id.lastIndexOf('_v') + 2)), key: k.key };
  }

  /** Encrypts a PAN for one card: the card id is bound as associated data. */
  async encrypt(db: Kysely<DB>, cardId: string, pan: string): Promise<{ enc: string; keyId: string }> {
    const { id, key } = await this.currentKey(db, 'pan');
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(`pan:${cardId}`));
    const ct = Buffer.concat([cipher.update(pan, 'utf8'), cipher.final()]);
    return { enc: [iv, ct, cipher.getAuthTag()].map((b) => b.toString('base64url')).join('.'), keyId: id };
  }

  async decrypt(db: Kysely<DB>, cardId: string, enc: string, keyId: string): Promise<string> {
    const { key } = await this.keyById(db, keyId);
    const [iv, ct, tag] = enc.split('.').map((p) => Buffer.from(p, 'base64url'));
    if (!iv || !ct || !tag) throw new Error('malformed PAN ciphertext');
    const decipher = createDecipheriv('aes-256-gcm', key, iv);
    decipher.setAAD(Buffer.from(`pan:${cardId}`));
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(ct), decipher.final()]).toString('utf8');
  }

  /** Keyed hash of a PAN: finds a card by number without storing the number. */
  async hash(db: Kysely<DB>, pan: string): Promise<string> {
    const { key } = await this.currentKey(db, 'pan-hash');
    return createHmac('sha256', key).update(pan).digest('hex');
  }

  /**
   * Keyed hash for finding a cardholder by e-mail or document (src/holders/identity.ts), under its
   * own data key: never rotated (every stored hash would have to change), resealed with the master key.
   */
  async lookupHash(db: Kysely<DB>, text: string): Promise<string> {
    const { key } = await this.currentKey(db, 'holder-hash');
    return createHmac('sha256', key).update(text, 'utf8').digest('hex');
  }

  /** The card verification value, derived on demand (never stored). */
  async cvv(db: Kysely<DB>, pan: string, expiryMonth: number, expiryYear: number): Promise<string> {
    const { key } = await this.currentKey(db, 'cvv');
    const mac = createHmac('sha256', key)
      .update(`${pan}|${String(expiryMonth).padStart(2, '0')}${expiryYear}`)
      .digest();
    return String(mac.readUInt32BE(0) % 1000).padStart(3, '0');
  }
}
