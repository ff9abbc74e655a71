import { recordAudit } from '../audit/trail.js';
import type { Services, VerbCtx } from '../context.js';
import { runVerb } from '../runner.js';
import { recordLogin, takeLoginAttempt, totpSecretOf } from './accounts.js';
import type { HashingQueue } from './hashing.js';
import { clientKey, throttleLogin } from './login-throttle.js';
import { verifyPassword } from './passwords.js';
import { totpRequired } from './roles.js';
import { matchStep } from './totp.js';

/**
 * Why a console login failed, as its audit record says (PCI DSS 10.2.1.4: invalid logical access
 * attempts are logged with the account they named). Never the password, nor the code.
 */
export type LoginFailure =
  /** No account has this e-mail. */
  | 'unknown_account'
  /** The account has not been set up (no password yet). */
  | 'not_set_up'
  | 'disabled'
  /** Locked after failures in a row (or by this very attempt). */
  | 'locked'
  | 'bad_password'
  /** The second factor is required and was not sent. */
  | 'code_missing'
  | 'bad_code'
  /** The code was spent, or the account locked or disabled, while this attempt was checked. */
  | 'refused'
  /** The client (its address, or its IPv6 /64) is past its attempts in the window. */
  | 'throttled'
  /** Password hashing's queue was full (src/console/hashing.ts): nothing was checked. */
  | 'busy';

export const LOGIN_FAILED = 'operator.login_failed';

interface Attempt {
  /** The e-mail as typed (cleaned of control characters, lower-cased): named by the record. */
  email: string;
  /** The client's address: the record's origin. */
  origin: string;
}

/** A failed login's record: the e-mail tried, the address and why; nothing else of the attempt. */
function failureRecord(ctx: VerbCtx, attempt: Attempt, reason: LoginFailure): Promise<void> {
  return recordAudit(
    ctx.tx,
    {
      by: { kind: 'operator', via: 'console', who: attempt.email || '(none)', origin: attempt.origin },
      action: LOGIN_FAILED,
      target: attempt.email,
    },
    ctx.now,
    null,
    { reason },
  );
}

/**
 * The start of a login, in one transaction: the client's attempt is counted (the per-address
 * limit, shared by every instance), and, unless that refuses it or hashing is busy, the account's
 * (takeLoginAttempt: before the password is checked). A refusal here is recorded at once.
 */
export async function beginLogin({
  ctx,
  input,
}: {
  ctx: VerbCtx;
  input: Attempt & { clientKey: string; operatorId: string | null; busy: boolean };
}): Promise<'open' | 'locked' | 'throttled' | 'busy'> {
  if (await throttleLogin(ctx.tx, input.clientKey, ctx.now)) {
    await failureRecord(ctx, input, 'throttled');
    return 'throttled';
  }
  if (input.busy) {
    await failureRecord(ctx, input, 'busy');
    return 'busy';
  }
  return takeLoginAttempt({ ctx, input });
}

/** Records a login that failed once its password (or code) was checked. */
export async function recordLoginFailure({ ctx, input }: { ctx: VerbCtx; input: Attempt & { reason: LoginFailure } }): Promise<void> {
  await failureRecord(ctx, input, input.reason);
}

/** What a login came to: a session, or a refusal (`busy`: the hashing queue was full, nothing checked). */
export type LoginOutcome = { sessionId: string } | { refused: 'failed' | 'throttled' | 'busy' };

/**
 * One login through the form: the e-mail (as typed, cleaned), the password and code as sent, and
 * the client's address. A place in the hashing queue is taken first, so a full queue refuses the
 * login before anything is hashed; then the client's and the account's attempts are counted
 * (beginLogin), the password checked (an unknown account against a decoy: the same statements and
 * the same time), then the second factor. Every failure is recorded with its reason.
 */
export async function attemptLogin(
  svc: Services,
  hashing: HashingQueue,
  input: { email: string; password: string; code: string; ip: string },
): Promise<LoginOutcome> {
  const { email, password, code } = input;
  const attempt: Attempt = { email, origin: input.ip };
  const refuse = async (reason: LoginFailure): Promise<LoginOutcome> => {
    await runVerb(svc, recordLoginFailure, { input: { ...attempt, reason }, actor: `operator:${email}` });
    return { refused: 'failed' };
  };
  const place = hashing.reserve();
  let passwordOk = false;
  let row: Awaited<ReturnType<typeof findOperator>>;
  let begun: Awaited<ReturnType<typeof beginLogin>>;
  try {
    row = await findOperator(svc, email);
    begun = await runVerb(svc, beginLogin, {
      input: { ...attempt, clientKey: clientKey(input.ip), operatorId: row?.password_hash ? row.id : null, busy: !place },
      actor: `operator:${email}`,
    });
    if (begun === 'busy' || !place) return { refused: 'busy' };
    if (begun === 'throttled') return { refused: 'throttled' };
    passwordOk = await place.run(() => verifyPassword(password, row?.password_hash ?? null));
  } finally {
    place?.release();
  }
  if (!row) return refuse('unknown_account');
  if (row.status !== 'active') return refuse('disabled');
  if (!row.password_hash) return refuse('not_set_up');
  if (begun === 'locked') return refuse('locked');
  if (!passwordOk) return refuse('bad_password');
  const secret = totpSecretOf(svc, row);
  const step =
    secret === null ? null : matchStep(secret, code, svc.clock(), row.totp_last_step === null ? null : Number(row.totp_last_step));
  if (secret === null && totpRequired(row.role, svc.config.env)) return refuse('code_missing');
  if (secret !== null && step === null) return refuse(code === '' ? 'code_missing' : 'bad_code');
  const started = await runVerb(svc, recordLogin, {
    input: { operatorId: row.id, email: row.email, step, origin: input.ip },
    actor: `operator:${row.email}`,
  });
  return started ?? refuse('refused');
}

const findOperator = (svc: Services, email: string) =>
  svc.database.db.selectFrom('operators').selectAll().where('email', '=', email).executeTakeFirst();
