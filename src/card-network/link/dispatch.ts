import type { Services } from '../../context.js';
import { answerMti, decode, Iso8583Error, type IsoMessage } from '../../iso8583/codec.js';
import { ResponseCode } from '../../iso8583/response-codes.js';
import { adviceAnswer } from '../advise.js';
import { authorizationAnswer } from '../authorize.js';
import { financialAdvice } from '../clear.js';
import { DecisionGate } from '../decision-gate.js';
import type { LinkAnswer } from '../identity.js';
import { reversalAnswer } from '../reverse.js';

/** A connection's state as its messages see it. */
export interface Peer {
  /** Set by an 0800 sign-on (field 70 `001`), cleared by a sign-off (`002`). Not required: see docs/network.md. */
  signedOn: boolean;
  /** The remote address, for the log. */
  remote: string;
  /** Told of each decision still running, also after its answer (91 at the deadline): a stop waits for them. */
  track(decision: Promise<unknown>): void;
}

/** What a frame gets: an answer to send, or the connection closed (a message whose MTI or STAN cannot be read). */
export type Outcome = { answer: IsoMessage; code: string } | { close: string };

/** Fields an answer echoes from its request when present (never the PAN, the expiry, field 48). */
const ECHOED = [3, 4, 6, 7, 11, 12, 13, 32, 33, 37, 41, 42, 49, 51, 70, 90, 95];

/** The answer to `request`: its echoed fields, field 39, and 38/54 when they apply. */
function answerTo(mti: string, request: Map<number, string>, answer: LinkAnswer): IsoMessage {
  const fields = new Map<number, string>();
  for (const f of ECHOED) {
    const v = request.get(f);
    if (v !== undefined) fields.set(f, v);
  }
  if (answer.authCode) fields.set(38, answer.authCode);
  fields.set(39, answer.code);
  if (answer.balance) fields.set(54, answer.balance);
  return { mti: answerMti(mti), fields };
}

/** Requests decided within the deadline: authorization (0100) and single message (0200), and their repeats. */
const DECIDED = new Set(['0100', '0101', '0200', '0201']);

/** Financial advices (clearing, refund) and their repeats. */
const ADVICES = new Set(['0220', '0221']);

/** Authorization advices (the network stood in: forced posts) and their repeats. */
const AUTH_ADVICES = new Set(['0120', '0121']);

/** Reversal requests and advices, and their repeats. */
const REVERSALS = new Set(['0400', '0401', '0420', '0421']);

/**
 * The decision, or `91` at the deadline (decisions §12.8) when it has not come and can no longer
 * commit: the deadline closes the decision's gate (src/card-network/decision-gate.ts), and a verb
 * that finds it closed rolls back (DeadlinePassed); a decision already committing is waited for,
 * so that a 91 never stands beside a stored decision. A failure before the verb (the database
 * unreachable) is `91` too.
 */
async function withinDeadline(
  svc: Services,
  peer: Peer,
  decision: Promise<LinkAnswer>,
  arrived: number,
  gate: DecisionGate,
): Promise<LinkAnswer> {
  const decided = decision.catch((err: unknown): LinkAnswer => {
    svc.log.warn({ err: { name: (err as Error).name, message: (err as Error).message } }, 'network link: no decision');
    return { code: ResponseCode.notInTime };
  });
  // At the deadline, 91 only if the decision can no longer commit; one committing is waited for.
  // A plain timer, cleared once decided (an abortable sleep made an AbortError and its
  // DOMException for every message: 2.5 % of the service's time under load, issue 42).
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<LinkAnswer>((resolve) => {
    timer = setTimeout(
      () => resolve(gate.close() ? { code: ResponseCode.notInTime } : decided),
      Math.max(0, arrived + svc.config.network.deadlineMs - svc.clock() - 5),
    );
  });
  peer.track(decided);
  try {
    return await Promise.race([decided, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Network management (0800): sign-on, sign-off, echo. */
function management(peer: Peer, fields: Map<number, string>): LinkAnswer {
  switch (fields.get(70)) {
    case '001':
      peer.signedOn = true;
      return { code: ResponseCode.approved };
    case '002':
      peer.signedOn = false;
      return { code: ResponseCode.approved };
    case '301':
      return { code: ResponseCode.approved };
    case undefined:
      return { code: ResponseCode.formatError };
    default:
      return { code: ResponseCode.invalidTransaction };
  }
}

/**
 * One frame's outcome. A message that does not decode is answered `30` (format error) when its MTI
 * and STAN could be read, with the fields read before the error echoed; otherwise the connection
 * is closed. Either way nothing is written.
 */
export async function handleFrame(svc: Services, peer: Peer, bytes: Uint8Array, arrived: number): Promise<Outcome> {
  let msg: IsoMessage;
  try {
    msg = decode(bytes);
  } catch (err) {
    if (!(err instanceof Iso8583Error)) throw err;
    const { mti, fields } = err.partial;
    svc.log.info({ peer: peer.remote, mti, where: err.where, reason: err.reason }, 'network link: malformed message');
    if (mti === null || !fields.has(11)) return { close: `unreadable message (${err.message})` };
    return { answer: answerTo(mti, fields, { code: ResponseCode.formatError }), code: ResponseCode.formatError };
  }
  const { mti, fields } = msg;
  if (!fields.has(11)) return { answer: answerTo(mti, fields, { code: ResponseCode.formatError }), code: ResponseCode.formatError };
  let answer: LinkAnswer;
  if (mti === '0800' || mti === '0801') answer = management(peer, fields);
  else if (DECIDED.has(mti)) {
    const gate = new DecisionGate();
    answer = await withinDeadline(svc, peer, authorizationAnswer(svc, mti, fields, arrived, gate), arrived, gate);
  } else if (REVERSALS.has(mti) || ADVICES.has(mti) || AUTH_ADVICES.has(mti)) {
    const posted = REVERSALS.has(mti)
      ? reversalAnswer(svc, mti, fields)
      : ADVICES.has(mti)
        ? financialAdvice(svc, mti, fields)
        : adviceAnswer(svc, mti, fields);
    answer = await posted.catch((err: unknown): LinkAnswer => {
      svc.log.warn({ err: { name: (err as Error).name, message: (err as Error).message } }, 'network link: no decision');
      return { code: ResponseCode.systemError };
    });
  } else answer = { code: ResponseCode.formatError };
  return { answer: answerTo(mti, fields, answer), code: answer.code };
}
