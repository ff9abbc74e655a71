import type { CardProgram } from '../client.js';

export class Page {
  constructor(private readonly client: CardProgram) {}

  /**
   * A one-time address of the hosted card page for your user (interface 4.4): send the user there
   * at once; it opens once, within 10 minutes. Without `email`, a product page with nothing personal.
   *
   * @example
   * const { webUrl } = await client.page.link({ email: 'alice@example.com' });
   */
  link(params: { email?: string } = {}): Promise<{ webUrl: string }> {
    return this.client.request<{ webUrl: string }>('/open/merchant/api/v2', { ...params }, 'keyed');
  }
}
