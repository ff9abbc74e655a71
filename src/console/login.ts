import { recordAudit } from '../audit/trail.js';
import type { Actor, Services, VerbCtx } from '../context.js';
import { runVerb } from '../runner.js';
import { recordLogin, takeLoginAttempt, totpSecretOf } from './accounts.js';
import type { HashingQueue, Reservation } from './hashing.js';
import { deviceOperator } from './known-device.js';
import { clientKey, countRefusal, isThrottled, queueKey, throttleLogin } from './login-throttle.js';
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
 * (takeLoginAttempt: before the password is checked). A refusal here is the client's first of its
 * window, recorded at once, or counted on its throttle row.
 */
export async function beginLogin({
  ctx,
  input,
}: {
  ctx: VerbCtx;
  input: Attempt & { clientKey: string; operatorId: string | null; busy: boolean };
}): Promise<'open' | 'locked' | 'throttled' | 'busy'> {
  // A refusal checks no credentials: the client's first in its window is recorded, the rest are
  // counted on its row and summed up in one record when the window is over (countRefusal).
  if (await throttleLogin(ctx.tx, input.clientKey, ctx.now)) {
    if (await countRefusal(ctx.tx, input.clientKey)) await failureRecord(ctx, input, 'throttled');
    return 'throttled';
  }
  if (input.busy) {
    if (await countRefusal(ctx.tx, input.clientKey)) await failureRecord(ctx, input, 'busy');
    return 'busy';
  }
  return takeLoginAttempt({ ctx, input });
}

/** Records a login that failed once its password (or code) was checked. */
export async function recordLoginFailure({ ctx, input }: { ctx: VerbCtx; input: Attempt & { reason: LoginFailure } }): Promise<void> {
  await failureRecord(ctx, input, input.reason);
}

/** What a login came to: a session, or a refusal (`busy`: the hashing queue was full, nothing checked). */
export type LoginOutcome = { sessionId: string; operatorId: string } | { refused: 'failed' | 'throttled' | 'busy' };

/**
 * One login through the form: the e-mail (as typed, cleaned), the password and code as sent, the
 * client's address and the browser's known-device cookie. The client's limit is read first: a
 * client past it is refused (and counted, beginLogin) without taking a place in the hashing queue.
 * Then a place is taken (a full queue, or a client network already holding its place, refuses the
 * login before anything is hashed; a known device of this very account takes a reserved place),
 * the account's attempts are counted, the password checked (an unknown account against a decoy:
 * the same statements and the same time), then the second factor. Every failure is recorded with
 * its reason.
 */
export async function attemptLogin(
  svc: Services,
  hashing: HashingQueue,
  input: { email: string; password: string; code: string; ip: string; device?: string | undefined },
): Promise<LoginOutcome> {
  const { email, password, code } = input;
  const attempt: Attempt = { email, origin: input.ip };
  const refuse = async (reason: LoginFailure): Promise<LoginOutcome> => {
    await runVerb(svc, recordLoginFailure, { input: { ...attempt, reason }, actor: consoleOperator(email, input.ip) });
    return { refused: 'failed' };
  };
  const row = await findOperator(svc, email);
  // The reserved lane is for a browser that has logged in to this very account before.
  const device = deviceOperator(svc.box, input.device, svc.clock());
  const who: Reservation = { client: queueKey(input.ip) };
  if (row && device === row.id) who.knownDevice = row.id;
  // The client's limit first: a client past it is refused without taking a place.
  const key = clientKey(input.ip);
  const place = (await svc.database.read((db) => isThrottled(db, key, svc.clock()))) ? null : hashing.reserve(who);
  let passwordOk = false;
  let begun: Awaited<ReturnType<typeof beginLogin>>;
  try {
    begun = await runVerb(svc, beginLogin, {
      input: { ...attempt, clientKey: key, operatorId: row?.password_hash ? row.id : null, busy: !place },
      actor: consoleOperator(email, input.ip),
    });
    if (begun === 'throttled') return { refused: 'throttled' };
    if (begun === 'busy' || !place) return { refused: 'busy' };
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
    actor: consoleOperator(row.email, input.ip),
  });
  return started ? { ...started, operatorId: row.id } : refuse('refused');
}

/** Who signs in at the console, as the runs of a login name them: the e-mail tried, from the client's address. */
const consoleOperator = (email: string, origin: string): Actor => ({ kind: 'operator', via: 'console', who: email, origin });

const findOperator = (svc: Services, email: string) =>
  svc.database.read((db) => db.selectFrom('operators').selectAll().where('email', '=', email).executeTakeFirst());
