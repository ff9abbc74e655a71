import type { Static } from 'typebox';
import type { MerchantCtx } from '../context.js';
import { invalid } from '../errors.js';
import type { OperationInput } from '../operation-input.js';
import { attemptsLeft, cresOf, enterOtp, respondChallenge } from './challenge.js';
import { sandboxDsResult } from './sandbox.js';
import type { AuthenticationRecord, SandboxThreeDsCompleteBody, SandboxThreeDsCompletion, ThreeDsChallengeRespondBody } from './schemas.js';
import { type AuthenticationRow, toAuthenticationRecord } from './store.js';

export type ThreeDsChallengeRespondInput = OperationInput<Static<typeof ThreeDsChallengeRespondBody>>;

/**
 * `threeDsChallengeRespond.html` (decisions §14.4): the merchant's app authenticated the cardholder
 * of an out-of-band challenge (approved: Y) or not (declined: N/01). Its own cards' challenges only
 * (another merchant's is 2750, as an unknown one); one that is over, or not out of band, is 2751.
 * The page waiting in the cardholder's browser sees the end at its next look and posts the CRes.
 */
export async function threeDsChallengeRespond({
  ctx,
  input,
}: {
  ctx: MerchantCtx;
  input: ThreeDsChallengeRespondInput;
}): Promise<AuthenticationRecord> {
  return toAuthenticationRecord(await respondChallenge({ ctx, input }), []);
}

export type SandboxThreeDsCompleteInput = OperationInput<Static<typeof SandboxThreeDsCompleteBody>>;

/**
 * The sandbox's `/sandbox/3ds/complete` (decisions §14.6): finishes a challenge without a browser,
 * by the same verbs the page runs: `otp` as the cardholder would type it (a wrong one counts, the
 * third ends it N/19), or `result` as the merchant's app would answer. Once it is over, the answer
 * carries what the sandbox's DS hands the 3DS Server from the RReq: `eci` and, for Y, the
 * `authenticationValue` the authorization needs (./sandbox.ts, sandboxDsResult).
 */
export async function sandboxThreeDsComplete({
  ctx,
  input,
}: {
  ctx: MerchantCtx;
  input: SandboxThreeDsCompleteInput;
}): Promise<SandboxThreeDsCompletion> {
  if ((input.otp === undefined) === (input.result === undefined)) throw invalid('otp', 'must be given, or result, one of the two');
  if (input.result !== undefined) {
    const row = await respondChallenge({ ctx, input: { acsTransID: input.acsTransID, result: input.result } });
    return { authentication: toAuthenticationRecord(row, []), attemptsLeft: null, ...(await over(ctx, row)) };
  }
  const step = await enterOtp({ ctx, input: { acsTransID: input.acsTransID, code: input.otp ?? '' } });
  if (step.kind === 'done')
    return { authentication: toAuthenticationRecord(step.row, []), attemptsLeft: null, ...(await over(ctx, step.row)) };
  return {
    authentication: toAuthenticationRecord(step.row, []),
    attemptsLeft: attemptsLeft(step.row),
    cres: null,
    eci: null,
    authenticationValue: null,
  };
}

/** A challenge that is over: the CRes the page would post, and the RReq's eci and value as the sandbox's DS passes them on. */
async function over(ctx: MerchantCtx, row: AuthenticationRow) {
  const ds = await sandboxDsResult(ctx.svc, ctx.tx, row.acs_trans_id);
  return { cres: cresOf(row), eci: ds?.eci ?? null, authenticationValue: ds?.authenticationValue ?? null };
}
