import { WebhookVerificationError as StandardError, Webhook } from 'standardwebhooks';
import { CardProgramError, WebhookVerificationError } from '../errors.js';
import type { AuthorizationRequest, CallbackEvent } from '../types.js';

type HeaderBag = Headers | Record<string, string | string[] | undefined>;

function headerRecord(headers: HeaderBag): Record<string, string> {
  const out: Record<string, string> = {};
  const get = (name: string) => {
    if (headers instanceof Headers) return headers.get(name) ?? undefined;
    const v = headers[name] ?? headers[name.toLowerCase()];
    return Array.isArray(v) ? v[0] : v;
  };
  for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
    const v = get(name);
    if (v !== undefined) out[name] = v;
  }
  return out;
}

export class Webhooks {
  constructor(private readonly secret: string | undefined) {}

  /**
   * Verifies a callback (Standard Webhooks: signature over id, timestamp and the raw body, and a
   * timestamp within 5 minutes) and returns its event. Verify the raw body, before any JSON parsing.
   * Delivery is at least once: drop an `eventId` you have already handled.
   *
   * @example
   * app.post('/hooks', express.raw({ type: 'application/json' }), (req, res) => {
   *   const event = client.webhooks.verify(req.body, req.headers); // throws WebhookVerificationError
   *   if (event.type === 'trade') record(event.tradeId, event.amount);
   *   res.sendStatus(200);
   * });
   */
  verify(rawBody: string | Buffer | Uint8Array, headers: HeaderBag, secret: string | undefined = this.secret): CallbackEvent {
    return verified<CallbackEvent>(rawBody, headers, secret, 'webhooks.verify');
  }

  /**
   * Verifies a request your authorization endpoint received (signed as callbacks are) and returns
   * it: the authorization under the id it will have, its card, cardholder and acceptor, before any
   * decision. Answer within your deadline with `Webhooks.decide(…)` as a 200 JSON body.
   *
   * @example
   * app.post('/authorize', express.raw({ type: 'application/json' }), (req, res) => {
   *   const { authorization } = client.webhooks.authorizationRequest(req.body, req.headers);
   *   const ok = authorization.amount <= 500 && authorization.merchant.country !== 'KP';
   *   res.type('json').send(Webhooks.decide({ approved: ok, reason: ok ? undefined : 'over our own limit' }));
   * });
   */
  authorizationRequest(
    rawBody: string | Buffer | Uint8Array,
    headers: HeaderBag,
    secret: string | undefined = this.secret,
  ): AuthorizationRequest {
    const event = verified<AuthorizationRequest>(rawBody, headers, secret, 'webhooks.authorizationRequest');
    if (event.type !== 'authorization.request') throw new WebhookVerificationError(`not an authorization.request but ${event.type}`);
    return event;
  }

  /**
   * The answer to an `authorization.request`: `{"approved": …, "reason": …}` as JSON text (a reason
   * is at most 200 characters; it is kept with the decline and shown to the merchant, not the cardholder).
   *
   * @example
   * res.type('json').send(Webhooks.decide({ approved: false, reason: 'velocity' }));
   */
  static decide(decision: { approved: boolean; reason?: string | undefined }): string {
    return JSON.stringify(
      decision.reason === undefined
        ? { approved: decision.approved }
        : { approved: decision.approved, reason: decision.reason.slice(0, 200) },
    );
  }
}

/** Verifies a Standard Webhooks request and parses its body. */
function verified<T>(rawBody: string | Buffer | Uint8Array, headers: HeaderBag, secret: string | undefined, what: string): T {
  if (!secret) throw new CardProgramError(`${what} needs the webhookSecret (whsec_…) in the client options or as an argument`);
  const payload = typeof rawBody === 'string' ? rawBody : Buffer.from(rawBody).toString('utf8');
  try {
    return new Webhook(secret).verify(payload, headerRecord(headers)) as T;
  } catch (err) {
    if (err instanceof StandardError) throw new WebhookVerificationError(err.message);
    throw new WebhookVerificationError((err as Error).message);
  }
}
