import { randomBytes } from 'node:crypto';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Services, system, type VerbCtx } from '../context.js';
import { makePrivateDir, PRIVATE_FILE_MODE } from '../db/files.js';
import { newId } from '../db/ids.js';
import { runVerb } from '../runner.js';
import { totpContext } from './accounts.js';
import { hashPassword } from './passwords.js';
import { newTotpSecret, otpauthUrl } from './totp.js';

/** The sandbox's ready-made admin (decisions §1's convenience, for the console). */
export const SANDBOX_ADMIN = 'admin@sandbox.test';

export interface SandboxAdmin {
  email: string;
  password: string;
  totpSecret: string;
  otpauth: string;
  url: string;
}

export const sandboxAdminFile = (svc: Services) => join(svc.config.dataDir, 'console-admin.json');

async function insertAdmin({ ctx, input }: { ctx: VerbCtx; input: { passwordHash: string; totpSecret: string } }): Promise<boolean> {
  const { tx, now } = ctx;
  const any = await tx.selectFrom('operators').select('id').limit(1).executeTakeFirst();
  if (any) return false;
  const id = newId('op');
  await tx
    .insertInto('operators')
    .values({
      id,
      email: SANDBOX_ADMIN,
      role: 'admin',
      status: 'active',
      password_hash: input.passwordHash,
      totp_enc: ctx.svc.box.seal(input.totpSecret, totpContext(id)),
      totp_last_step: null,
      failed_logins: 0,
      locked_until: null,
      setup_hash: null,
      setup_expires_at: null,
      last_login_at: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return true;
}

/**
 * In the sandbox with the console on and no operator yet: an admin, set up, whose password and
 * TOTP key are written to data/console-admin.json (mode 0600), so a newcomer logs in at once.
 * Production has no such account: its first admin comes from `cardprogram operator create`.
 * Returns the admin when it was created now, else null.
 */
export async function ensureSandboxAdmin(svc: Services): Promise<SandboxAdmin | null> {
  if (svc.config.env !== 'sandbox' || !svc.config.console) return null;
  if (await svc.database.read((db) => db.selectFrom('operators').select('id').limit(1).executeTakeFirst())) return null;
  const password = randomBytes(15).toString('base64url');
  const totpSecret = newTotpSecret();
  let created: boolean;
  try {
    created = await runVerb(svc, insertAdmin, {
      input: { passwordHash: await hashPassword(password), totpSecret },
      actor: system('sandbox'),
    });
  } catch (err) {
    // Another process of `serve --processes N` made it first (the e-mail is unique): theirs stands.
    if (await svc.database.read((db) => db.selectFrom('operators').select('id').limit(1).executeTakeFirst())) return null;
    throw err;
  }
  if (!created) return null;
  const admin: SandboxAdmin = {
    email: SANDBOX_ADMIN,
    password,
    totpSecret,
    otpauth: otpauthUrl(totpSecret, SANDBOX_ADMIN),
    url: `${svc.config.publicUrl}/console`,
  };
  const file = sandboxAdminFile(svc);
  makePrivateDir(svc.config.dataDir);
  writeFileSync(file, `${JSON.stringify(admin, null, 2)}\n`, { mode: PRIVATE_FILE_MODE });
  chmodSync(file, PRIVATE_FILE_MODE);
  return admin;
}
