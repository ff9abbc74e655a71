import { describe } from 'node:test';
import { type TestDialect, testDialects } from './db.js';

/** Runs a suite once per database (kysely's own test-setup does the same). */
export function eachDialect(name: string, suite: (dialect: TestDialect) => void): void {
  for (const dialect of testDialects()) {
    describe(`${name} [${dialect.name}]`, () => suite(dialect));
  }
}
