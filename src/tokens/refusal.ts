/**
 * A refusal of the TSP endpoint (decisions §15.2): an HTTP status with the bare JSON `{error,
 * detail}`, `detail` naming the element. Thrown by the tokens' verbs (their writes roll back) and
 * answered by the listener as is.
 */
export class TspRefusal extends Error {
  constructor(
    readonly status: 400 | 404 | 409 | 429,
    readonly error: 'invalid_request' | 'not_found' | 'conflict' | 'too_many_codes',
    readonly detail: string,
  ) {
    super(`${error}: ${detail}`);
    this.name = 'TspRefusal';
  }
}
