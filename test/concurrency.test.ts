import { it } from 'node:test';
import { eachDialect } from './helpers/dialects.js';
import { DISPUTE_RACES } from './races/disputes.js';
import { ledgerIsSound, RACES as MONEY_RACES } from './races/money.js';
import { served } from './races/served.js';

// Issue 15: each rule that depends on a row's state, raced over HTTP against the real app on both
// databases (docs/architecture.md, Concurrency). 20 rounds each here; `npm run stress` runs the
// same races for as long as asked (STRESS_SECONDS).
const ROUNDS = Number(process.env.RACE_ROUNDS ?? 20);

const RACES = [...MONEY_RACES, ...DISPUTE_RACES];

eachDialect('money under concurrency', (dialect) => {
  for (const race of RACES) {
    it(`${race.name} (${ROUNDS} rounds)`, async (t) => {
      const s = await served(t, dialect);
      await race.run(s, { rounds: ROUNDS });
      await ledgerIsSound(s);
    });
  }
});
