/**
 * How a request may be repeated. A write keeps its `randomStr` across retries, so the service
 * replays the first answer instead of acting twice; a read gets a fresh `randomStr` per attempt
 * (the service takes a read's `randomStr` once; a page link is sent this way too); a keyed operation
 * carries its own key (`requestNo`).
 */
export type RequestKind = 'write' | 'read' | 'keyed';

/**
 * What a resource (client.cards, client.trades, …) sends its operations through: the client itself.
 * A resource sees only this, not the client's class, so the two do not import each other.
 */
export interface Requester {
  request<T>(path: string, body: Record<string, unknown>, kind: RequestKind): Promise<T>;
}
