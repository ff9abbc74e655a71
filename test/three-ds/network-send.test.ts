// `cardprogram network send --eci --authentication-value` (docs/network.md "The simulator", §14.5):
// the acquirer simulator carries a 3-D Secure authentication in field 48 subelements 42/43, so an
// operator can play the whole purchase from a shell: authenticate, then authorize on the link.
// The value is never printed; a second use is 05 authentication_failed; a bad value is the option's error.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { build, type Harness, randomStr, testConfig } from '../helpers/app.js';
import { fundedCard } from '../helpers/cards.js';
import { childDatabaseUrl, runCli } from '../helpers/cli.js';
import { eachDialect } from '../helpers/dialects.js';
import { cardSecrets, linkOf } from '../helpers/link.js';
import { noteSecret } from '../helpers/log-audit.js';

const cliEnv = (h: Harness) => ({
  DATABASE_URL: childDatabaseUrl(h.db),
  CARDPROGRAM_MASTER_KEY: h.config.masterKey.toString('hex'),
  CARDPROGRAM_DATA_DIR: h.db.dataDir,
});

/** A shared machine may be slower than the link's 1.5 s deadline: a 91 here would test the load. */
const slow = { network: { ...testConfig('').network, deadlineMs: 15_000 } };

eachDialect('network send with 3-D Secure (--eci, --authentication-value)', (dialect) => {
  it('carries 42/43 (the value never printed): approved once, then 05 authentication_failed; by --pan without a CVV2 it is e-commerce 810; bad values and types refused', async (t) => {
    const h = await build(t, dialect, slow);
    const { cardId } = await fundedCard(h, { topUp: 100 });
    const card = await cardSecrets(h, cardId);
    const link = await linkOf(t, h);
    const auth = await h.call('/sandbox/3ds/authenticate', { cardId, amount: 20, randomStr: randomStr() });
    const ares = auth.body.model.ares as { transStatus: string; eci: string; authenticationValue: string; acsTransID: string };
    assert.equal(ares.transStatus, 'Y', JSON.stringify(auth.body));
    noteSecret('authentication-value', ares.authenticationValue);
    const send = async (...args: string[]) => {
      const res = await runCli(['network', 'send', '--port', String(link.port), ...args], cliEnv(h));
      assert.ok(
        !res.stdout.includes(ares.authenticationValue) && !res.stderr.includes(ares.authenticationValue),
        'the value is never printed',
      );
      assert.ok(!res.stdout.includes(card.pan), 'no PAN in clear');
      return res;
    };
    const three = ['--eci', ares.eci, '--authentication-value', ares.authenticationValue];

    const human = await send('--card', cardId, '--type', 'purchase', '--amount', '20', ...three);
    assert.equal(human.code, 0, `${human.stderr}\n${human.stdout}`);
    assert.match(human.stdout, /^\s+22 .* 810$/m);
    assert.match(human.stdout, /^\s+48 .* 420205 43 authentication value \(not shown\) 92 CVV2 \(not shown\)$/m);
    const used = await h.db.database.db
      .selectFrom('three_ds_authentications')
      .select('used_trade_id')
      .where('acs_trans_id', '=', ares.acsTransID)
      .executeTakeFirstOrThrow();
    assert.match(String(used.used_trade_id), /^trd_/, 'the value taken by the approval');
    const trade = await h.call('/api/network/tradeQuery.html', { tradeId: used.used_trade_id, randomStr: randomStr() });
    assert.deepEqual(trade.body.model.authentication, { acsTransID: ares.acsTransID, transStatus: 'Y', eci: '05', method: 'frictionless' });

    // Again: the value is spent. By --pan without a CVV2 (no database needed): e-commerce, not credential on file.
    const again = await send('--pan', card.pan, '--expiry', card.expiry, '--type', 'purchase', '--amount', '1', ...three, '--json');
    assert.equal(again.code, 2, again.stderr);
    const out = JSON.parse(again.stdout);
    assert.deepEqual(
      [out.request.fields['22'], out.request.fields['48'], out.code],
      ['810', '420205 43 authentication value (not shown)', '05'],
    );
    const declined = await h.db.database.db
      .selectFrom('authorizations')
      .select(['decline_reason'])
      .where('card_id', '=', cardId)
      .orderBy('created_at', 'desc')
      .executeTakeFirstOrThrow();
    assert.equal(declined.decline_reason, 'authentication_failed');

    const short = await send('--card', cardId, '--type', 'purchase', '--amount', '1', '--authentication-value', 'AAAA');
    assert.equal(short.code, 1);
    assert.match(short.stderr, /--authentication-value: must be 28 characters, got 4/);
    const eci = await send('--card', cardId, '--type', 'purchase', '--amount', '1', '--eci', '5');
    assert.equal(eci.code, 1);
    assert.match(eci.stderr, /--eci: must be 2 characters/);
    const clear = await send('--card', cardId, '--type', 'clear', ...three);
    assert.equal(clear.code, 1);
    assert.match(clear.stderr, /--eci and --authentication-value go with a purchase/);
    const help = await runCli(['network', 'send', '--help'], {});
    assert.match(help.stdout, /--eci <nn>/);
    assert.match(help.stdout, /--authentication-value <base64>/);
  });
});
