import type { Requester } from '../request.js';

export class Page {
  constructor(private readonly client: Requester) {}

  /**
   * A one-time address of the hosted card page for your user (interface 4.4): send the user there
   * at once; it opens once, within 10 minutes. Without `email`, a product page with nothing personal.
   * Each attempt is signed with a timestamp and a fresh single-use `randomStr`, so a captured request
   * cannot mint another link (the service requires both in production).
   *
   * @example
   * const { webUrl } = await client.page.link({ email: 'alice@example.com' });
   */
  link(params: { email?: string } = {}): Promise<{ webUrl: string }> {
    return this.client.request<{ webUrl: string }>('/open/merchant/api/v2', { ...params }, 'read');
  }
}
