/**
 * Failures of the database itself rather than of a request: PostgreSQL unreachable or restarting,
 * an SQLite disk that is full or read-only. A request meeting one is answered 503 with
 * `Retry-After` (code 1, "Service temporarily unavailable", docs/errors.md), never a bare 500, and
 * the operator's log says what is wrong in words. Nothing of the request was committed: each
 * operation is one transaction, and its idempotency record is written in it.
 */
export interface DatabaseFault {
  /** What an operator reads in the log. */
  reason: string;
  /** Seconds a client should wait before retrying. */
  retryAfterSeconds: number;
}

// Network errors under node-postgres (see connectionLost), and PostgreSQL's states that are the
// database failing rather than the request.
const PG_NETWORK = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
const PG_STATES: Record<string, DatabaseFault> = {
  '25006': { reason: 'PostgreSQL is read-only (a standby after a failover, or default_transaction_read_only)', retryAfterSeconds: 5 },
  '53100': { reason: "PostgreSQL's disk is full: free space on it", retryAfterSeconds: 30 },
  '53200': { reason: 'PostgreSQL is out of memory', retryAfterSeconds: 5 },
  '40P01': { reason: 'a deadlock between concurrent transactions (40P01); a retry succeeds', retryAfterSeconds: 1 },
  '40001': { reason: 'a serialization conflict between concurrent transactions (40001); a retry succeeds', retryAfterSeconds: 1 },
  '57014': { reason: 'a statement ran past its time limit (statement_timeout): PostgreSQL is overloaded or locked', retryAfterSeconds: 5 },
};

export function databaseFault(err: unknown): DatabaseFault | null {
  if (!(err instanceof Error)) return null;
  const code = String((err as { code?: unknown }).code ?? '');
  if (code.startsWith('SQLITE_')) {
    if (code === 'SQLITE_FULL') return { reason: 'the database disk is full: free space on it', retryAfterSeconds: 30 };
    if (code.startsWith('SQLITE_READONLY'))
      return { reason: 'the database file or its directory is read-only: the service must be able to write it', retryAfterSeconds: 30 };
    if (code.startsWith('SQLITE_IOERR'))
      return { reason: `the database file could not be read or written (${code})`, retryAfterSeconds: 5 };
    if (code === 'SQLITE_CANTOPEN') return { reason: 'the database file cannot be opened', retryAfterSeconds: 30 };
    if (code.startsWith('SQLITE_BUSY'))
      return { reason: `the database is locked by another process for too long (${code})`, retryAfterSeconds: 1 };
    return null;
  }
  const state = PG_STATES[code];
  if (state) return state;
  if (err.message.includes('timeout exceeded when trying to connect'))
    return {
      reason:
        'no PostgreSQL connection within the pool-wait bound (CARDPROGRAM_PG_POOL_WAIT_MS): the server is unreachable, or every pooled connection is busy',
      retryAfterSeconds: 1,
    };
  if (code === '53300' || connectionLost(err))
    return { reason: `PostgreSQL is not reachable (${code || err.message})`, retryAfterSeconds: 1 };
  return null;
}

/**
 * A PostgreSQL connection that can no longer be used, or could not be had: the network failed under
 * it (class 08, a reset, a refused connect), or the server ended its session (57P: an administrator's
 * command, a shutdown, a crash). node-postgres says so in words when a connection died under a query
 * ("Connection terminated") or between two queries of a transaction (the next one: "Client has
 * encountered a connection error"). "Client was closed and is not queryable" is not here: that is a
 * client used after its release, a defect.
 */
export function connectionLost(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = String((err as { code?: unknown }).code ?? '');
  return (
    PG_NETWORK.has(code) ||
    code.startsWith('08') ||
    code.startsWith('57P') ||
    err.message.includes('Connection terminated') ||
    // The client stopped waiting for an answer (query_timeout): the connection is in an unknown state.
    err.message.includes('Query read timeout') ||
    err.message.includes('Client has encountered a connection error')
  );
}
