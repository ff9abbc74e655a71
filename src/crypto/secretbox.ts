import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';

/** The configured master key is not the one the stored secrets were sealed with. */
export class MasterKeyMismatch extends Error {
  override name = 'MasterKeyMismatch';
}

/**
 * Authenticated encryption of small secrets at rest (merchant HMAC and webhook secrets) with
 * AES-256-GCM under the master key. The key id (first bytes of the key's SHA-256) is stored with
 * each value so that a rotated key can be told apart from a wrong one.
 * Format: `v1.<keyId>.<iv>.<ciphertext>.<tag>`, each part base64url.
 */
export class SecretBox {
  readonly keyId: string;
  /** Every key that may open a value: the current one and the previous ones of a rotation. */
  private readonly keys = new Map<string, Buffer>();

  /**
   * `previous` are earlier master keys, kept only while a rotation is under way: values sealed
   * under them still open, and `cardprogram keys reseal` moves them under the current key.
   */
  constructor(
    private readonly key: Buffer,
    previous: readonly Buffer[] = [],
  ) {
    if (key.length !== 32) throw new Error('master key must be 32 bytes');
    this.keyId = SecretBox.idOf(key);
    for (const k of previous) {
      if (k.length !== 32) throw new Error('master key must be 32 bytes');
      this.keys.set(SecretBox.idOf(k), k);
    }
    this.keys.set(this.keyId, key);
  }

  /** The ids of the previous master keys (they open, never seal): never the keys. */
  get previousKeyIds(): string[] {
    return [...this.keys.keys()].filter((id) => id !== this.keyId);
  }

  static idOf(key: Buffer): string {
    return createHash('sha256').update(key).digest('base64url').slice(0, 8);
  }

  /**
   * A key for one purpose derived from the current master key (HKDF-SHA256, the purpose as its
   * info): never the master key itself, and a new master key gives new derived keys.
   */
  derivedKey(purpose: string): Buffer {
    return Buffer.from(hkdfSync('sha256', this.key, Buffer.alloc(0), `cardprogram:${purpose}`, 32));
  }

  seal(plaintext: string, context: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    // The context (e.g. the merchant id) is bound as associated data: a ciphertext copied to
    // another row does not decrypt.
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v1', this.keyId, iv.toString('base64url'), ct.toString('base64url'), cipher.getAuthTag().toString('base64url')].join('.');
  }

  /** Whether a value is sealed under the current key (else a reseal moves it). */
  isCurrent(sealed: string): boolean {
    return sealed.startsWith(`v1.${this.keyId}.`);
  }

  open(sealed: string, context: string): string {
    const [version, keyId, iv, ct, tag] = sealed.split('.');
    if (version !== 'v1' || keyId === undefined || iv === undefined || ct === undefined || tag === undefined) {
      throw new Error('malformed sealed value');
    }
    const key = this.keys.get(keyId);
    if (!key) {
      throw new MasterKeyMismatch(
        `stored secrets are sealed under master key ${keyId}, but CARDPROGRAM_MASTER_KEY is ${this.keyId}${this.keys.size > 1 ? ' (and CARDPROGRAM_MASTER_KEY_PREVIOUS does not hold it)' : ''}`,
      );
    }
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
  }
}
