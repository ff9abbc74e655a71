import { WebhookVerificationError as StandardError, Webhook } from 'standardwebhooks';
import { CardProgramError, WebhookVerificationError } from '../errors.js';
import type { CallbackEvent } from '../types.js';

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
    if (!secret) throw new CardProgramError('webhooks.verify needs the webhookSecret (whsec_…) in the client options or as an argument');
    const payload = typeof rawBody === 'string' ? rawBody : Buffer.from(rawBody).toString('utf8');
    try {
      return new Webhook(secret).verify(payload, headerRecord(headers)) as CallbackEvent;
    } catch (err) {
      if (err instanceof StandardError) throw new WebhookVerificationError(err.message);
      throw new WebhookVerificationError((err as Error).message);
    }
  }
}
