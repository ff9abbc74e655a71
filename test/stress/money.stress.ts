import { it } from 'node:test';
import { eachDialect } from '../helpers/dialects.js';
import { DISPUTE_RACES } from '../races/disputes.js';
import { ledgerIsSound, RACES as MONEY_RACES } from '../races/money.js';
import { served } from '../races/served.js';

// `npm run stress`: the races of test/concurrency.test.ts for as long as asked. STRESS_SECONDS
// (default 60) is shared out between the races, per database; DATABASE_URL picks one database.
const seconds = Number(process.env.STRESS_SECONDS ?? 60);
const BATCH = 10;

const RACES = [...MONEY_RACES, ...DISPUTE_RACES];

eachDialect('money under concurrency, stressed', (dialect) => {
  const perRace = (seconds * 1000) / RACES.length;
  for (const race of RACES) {
    it(race.name, { timeout: perRace * 4 + 120_000 }, async (t) => {
      const s = await served(t, dialect);
      const rounds = await race.run(s, { rounds: BATCH, until: Date.now() + perRace });
      await ledgerIsSound(s);
      t.diagnostic(`${rounds} rounds`);
    });
  }
});
