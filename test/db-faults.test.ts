// Which errors mean the database itself is failing (503 with a wait). The faults themselves:
// test/db-faults.postgres.test.ts (PostgreSQL's connections) and test/db-faults.sqlite.test.ts (a full or read-only disk).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { databaseFault } from '../src/db/faults.js';

describe('faults around the database', () => {
  it('which errors are the database failing (503 with a wait) and which are not', () => {
    const e = (code: string, message = 'x') => Object.assign(new Error(message), { code });
    const cases: Array<[Error, number | null]> = [
      [e('ECONNREFUSED'), 1],
      [e('57P01', 'terminating connection due to administrator command'), 1],
      [e('08006'), 1],
      [e('25006', 'cannot execute INSERT in a read-only transaction'), 5],
      [e('53100'), 30],
      [e('40P01'), 1],
      [new Error('timeout exceeded when trying to connect'), 1],
      [new Error('Connection terminated unexpectedly'), 1],
      [new Error('Client has encountered a connection error and is not queryable'), 1],
      [e('SQLITE_FULL'), 30],
      [e('SQLITE_READONLY_DBMOVED'), 30],
      [e('SQLITE_IOERR_FSYNC'), 5],
      [e('SQLITE_BUSY_SNAPSHOT'), 1],
      // Defects, not outages: a constraint, a bad query, a client used after release.
      [e('SQLITE_CONSTRAINT_UNIQUE'), null],
      [e('23505'), null],
      [e('42P01', 'relation does not exist'), null],
      [new Error('Client was closed and is not queryable'), null],
      [new TypeError('x is undefined'), null],
    ];
    for (const [err, wait] of cases)
      assert.equal(databaseFault(err)?.retryAfterSeconds ?? null, wait, `${err.message} ${(err as { code?: string }).code}`);
  });
});
