import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { childDatabaseUrl, ROOT, run } from './helpers/cli.js';
import { isolatedDatabase } from './helpers/db.js';
import { eachDialect } from './helpers/dialects.js';
import { eventually } from './helpers/receiver.js';
import { freePort, startService } from './helpers/service.js';

/** The code block after `<!-- test: NAME -->` in docs/getting-started.md: what a reader copies. */
function snippet(name: string): string {
  const doc = readFileSync(join(ROOT, 'docs', 'getting-started.md'), 'utf8');
  const m = new RegExp(`<!-- test: ${name} -->\\n\`\`\`\\w*\\n([\\s\\S]*?)\\n\`\`\``).exec(doc);
  assert.ok(m?.[1], `docs/getting-started.md has the ${name} snippet`);
  return m[1];
}

// The Python samples run with python3 3.10+ and the SDK from this clone (PYTHONPATH, as the guide
// says), nothing installed; without python3 they are not run and the test says so.
const PYTHON = process.env.PYTHON || 'python3';
const hasPython = spawnSync(PYTHON, ['-c', 'import sys; sys.exit(sys.version_info < (3, 10))']).status === 0;

eachDialect('getting started (docs/getting-started.md), as a new user runs it', (dialect) => {
  it('start the service, cardprogram demo, your own cardholder and card three ways, list a card’s transactions with curl, Node and the SDK, receive a verified callback, KYC three ways', async (t) => {
    const db = await isolatedDatabase(dialect);
    // The reader's directory: inside the repository, so `npx cardprogram` and `@cardprogram/client` resolve as there.
    const work = join(ROOT, 'test-artifacts', `getting-started-${randomBytes(4).toString('hex')}`);
    mkdirSync(join(work, 'data'), { recursive: true });
    const children: ChildProcess[] = [];
    t.after(async () => {
      for (const c of children) c.kill('SIGKILL');
      await db.cleanup();
      rmSync(work, { recursive: true, force: true });
    });
    // A timestamp required as in production (issue 30.2): every sample must sign one to pass.
    const base = {
      DATABASE_URL: childDatabaseUrl(db),
      CARDPROGRAM_DATA_DIR: join(work, 'data'),
      CARDPROGRAM_WORKER_POLL_MS: '50',
      // The sandbox's automatic KYC reviewer (step 8) decides sooner than its 5 s: the guide's scripts wait for it either way.
      CARDPROGRAM_KYC_AUTO_DECISION_MS: '1000',
      CARDPROGRAM_REQUIRE_TIMESTAMP: 'on',
      // The card network link, plain TCP on loopback (the guide's 8583; a free port here).
      CARDPROGRAM_NETWORK_PORT: String(await freePort()),
      // A machine shared with other test runs may pass the 1.5 s deadline (91): the guide is not about load.
      CARDPROGRAM_NETWORK_DEADLINE_MS: '15000',
    };

    // 1. The service, as `npm start` runs it.
    const service = await startService(base);
    children.push(service.child);
    const demoFile = JSON.parse(readFileSync(join(work, 'data', 'demo-merchant.json'), 'utf8'));
    assert.equal(demoFile.baseUrl, service.url);
    const env = { ...base, CARDPROGRAM_PUBLIC_URL: service.url, CARDPROGRAM_DATA_DIR: 'data' };
    const sh = (script: string, extra: Record<string, string> = {}) =>
      run('bash', ['-euo', 'pipefail', '-c', script], work, { ...env, ...extra });
    const pyEnv = { ...env, PYTHONPATH: join(ROOT, 'sdk', 'python'), PYTHONDONTWRITEBYTECODE: '1' };
    const py = (name: string, file: string, extra: Record<string, string> = {}) => {
      writeFileSync(join(work, file), snippet(name));
      return run(PYTHON, [file], work, { ...pyEnv, ...extra });
    };
    if (!hasPython) t.diagnostic(`${PYTHON} (3.10 or later) not found: the guide's Python samples were not run`);

    // 2. The demo, with the command the guide gives.
    const demo = await sh('npx cardprogram demo --holders 2 --days 20 --seed 11 --json');
    assert.equal(demo.code, 0, demo.stderr);
    const filled = JSON.parse(demo.stdout);
    assert.equal(filled.holders.length, 2);
    const cardId: string = filled.holders[0].cards[0].cardId;
    assert.ok(filled.trades > 2);
    const listed = await sh(
      `npx cardprogram call tradeList --data '{"cardId":"${cardId}","beginDate":"${new Date(Date.now() - 30 * 86_400_000).toISOString().slice(0, 10)}","endDate":"${new Date().toISOString().slice(0, 10)}","start":0}'`,
    );
    assert.equal(listed.code, 0, listed.stderr);
    const total = JSON.parse(listed.stdout).total as number;
    assert.ok(total > 1, 'the demo card has a history');

    // 3. Your own cardholder and card: cardprogram call, curl, the SDK; each ends with the two records.
    const viaCall = await sh(snippet('call-own-card'));
    assert.equal(viaCall.code, 0, viaCall.stderr);
    assert.match(viaCall.stdout, /"holderId": "hld_\w+",\n\s+"auditStatus": 0/);
    assert.match(viaCall.stdout, /"auditStatus": 2/);
    assert.match(viaCall.stdout, /"tradeType": 100,[\s\S]*"tradeType": 150,[\s\S]*"total": 2,/);
    const viaCurl = await sh(snippet('curl-own-card'));
    assert.equal(viaCurl.code, 0, viaCurl.stderr);
    const curlLines = viaCurl.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.equal(curlLines.length, 6, viaCurl.stdout);
    assert.equal(curlLines[0].auditStatus, 0);
    assert.equal(curlLines[1].model.auditStatus, 2);
    assert.equal(curlLines[2].model.status, 'active');
    assert.deepEqual([curlLines[3].model.tradeType, curlLines[3].model.amount], [100, 100]);
    assert.deepEqual([curlLines[4].model.tradeType, curlLines[4].model.amount], [150, 12.5]);
    assert.deepEqual(
      curlLines[5].tradeList.map((r: { tradeType: number }) => r.tradeType),
      [150, 100],
    );
    // A remark with & and %, signed as docs/signing.md says (issue 30.1).
    assert.equal(curlLines[5].tradeList[0].remark, 'Coffee & cake, 100% arabica');
    writeFileSync(join(work, 'card-sdk.mjs'), snippet('sdk-own-card'));
    const viaSdk = await run(process.execPath, ['card-sdk.mjs'], work, env);
    assert.equal(viaSdk.code, 0, viaSdk.stderr);
    assert.match(
      viaSdk.stdout,
      /^holder hld_\w+ auditStatus 0\nreviewed: auditStatus 2\ncard card_\w+ \d{6}\*+\d{4} active\ntop-up trd_\w+ 100 EUR\nauthorization trd_\w+ 12\.5 EUR\n\d{4}-\d\d-\d\d 150 1 12\.5 EUR Coffee\n\d{4}-\d\d-\d\d 100 1 100 EUR Top-up\navailable 87\.5 ledger 100\n$/,
    );

    if (hasPython) {
      const viaPython = await py('py-own-card', 'card_sdk.py');
      assert.equal(viaPython.code, 0, viaPython.stderr);
      assert.match(
        viaPython.stdout,
        /^holder hld_\w+ auditStatus 0\nreviewed: auditStatus 2\ncard card_\w+ \d{6}\*+\d{4} active\ntop-up trd_\w+ 100 EUR\nauthorization trd_\w+ 12\.5 EUR\n\d{4}-\d\d-\d\d 150 1 12\.5 EUR Coffee\n\d{4}-\d\d-\d\d 100 1 100 EUR Top-up\navailable 87\.5 ledger 100\n$/,
      );
    }

    // 3b. A card with a daily limit: the second authorization is declined by it.
    const limited = await sh(snippet('daily-limit'), { CARD_ID: cardId });
    assert.equal(limited.code, 0, `${limited.stderr}\n${limited.stdout}`);
    assert.match(limited.stdout, /^1\n/);
    assert.match(limited.stdout, /"code": "2728",\n\s+"msg": "amount: the card’s daily limit of 20 EUR has 5 EUR left"/);
    assert.match(limited.stdout, /"declineReason": "spending_limit"/);
    assert.match(limited.stdout, /source: 'card',[\s\S]*spent: 15,[\s\S]*remaining: 5/);

    if (hasPython) {
      const pyLimited = await py('py-daily-limit', 'daily_limit.py', { CARD_ID: cardId });
      assert.equal(pyLimited.code, 0, pyLimited.stderr);
      assert.equal(
        pyLimited.stdout,
        '1\n2728 amount: the card’s daily limit of 20 EUR has 5 EUR left spending_limit\ndaily spent 15 remaining 5\n',
      );
    }

    // 4. curl and openssl.
    const curl = await sh(snippet('curl-trade-list'), { CARD_ID: cardId });
    assert.equal(curl.code, 0, curl.stderr);
    const page = JSON.parse(curl.stdout);
    assert.equal(page.total, total);
    assert.equal(page.tradeList.length, Math.min(10, total));

    // 5. Node without a library, 6. the SDK: the guide's scripts, saved and run as a reader would.
    writeFileSync(join(work, 'list-node.mjs'), snippet('node-trade-list'));
    const node = await run(process.execPath, ['list-node.mjs'], work, { ...env, CARD_ID: cardId });
    assert.equal(node.code, 0, node.stderr);
    // Its purchase (remark "M&S, 100% wool", signed with % and & escaped) is the newest of total + 1.
    assert.match(node.stdout, new RegExp(`^authorized trd_\\w+\\n${total + 1} transactions; the newest: \\{"cardNo"`));
    assert.match(node.stdout, /"remark":"M&S, 100% wool"/);
    writeFileSync(join(work, 'list-sdk.mjs'), snippet('sdk-trade-list'));
    const sdk = await run(process.execPath, ['list-sdk.mjs'], work, { ...env, CARD_ID: cardId });
    assert.equal(sdk.code, 0, sdk.stderr);
    assert.match(sdk.stdout, new RegExp(`\\n${total + 1} transactions\\n$`));
    assert.match(sdk.stdout, /^\d{4}-\d\d-\d\d (top-up|authorization|payment|refund|withdrawal|adjustment|fee) /m, 'types by name');
    // Without CARD_ID both scripts say what to do, in one line, without a stack trace.
    for (const script of ['list-node.mjs', 'list-sdk.mjs']) {
      const bare = await run(process.execPath, [script], work, { ...env, CARD_ID: '' });
      assert.equal(bare.code, 1, script);
      assert.equal(bare.stderr.trim(), 'set CARD_ID to a card id: step 2 prints one (export CARD_ID=card_…)', script);
    }

    // 5 and 6 in Python: without a library (its purchase makes total + 2), then with the SDK.
    if (hasPython) {
      const plain = await py('py-trade-list-plain', 'list_plain.py', { CARD_ID: cardId });
      assert.equal(plain.code, 0, plain.stderr);
      assert.match(plain.stdout, new RegExp(`^authorized trd_\\w+\\n${total + 2} transactions; the newest: \\{"cardNo"`));
      assert.match(plain.stdout, /"remark": "M&S, 100% wool"/);
      const listed = await py('py-sdk-trade-list', 'list_sdk.py', { CARD_ID: cardId });
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(listed.stdout, new RegExp(`\\n${total + 2} transactions\\n$`));
      assert.match(
        listed.stdout,
        /^\d{4}-\d\d-\d\d (top_up|authorization|payment|withdrawal|settlement_adjustment|fee) /m,
        'types by name',
      );
      for (const script of ['list_plain.py', 'list_sdk.py']) {
        const bare = await run(PYTHON, [script], work, { ...pyEnv, CARD_ID: '' });
        assert.equal(bare.code, 1, script);
        assert.equal(bare.stderr.trim(), 'set CARD_ID to a card id: step 2 prints one (export CARD_ID=card_…)', script);
      }
    }

    // 7. A verified callback.
    const hooksPort = String(await freePort());
    writeFileSync(join(work, 'hooks.mjs'), snippet('sdk-webhook-receiver'));
    const hooks = spawn(process.execPath, ['hooks.mjs'], { cwd: work, env: { ...process.env, ...env, HOOKS_PORT: hooksPort } });
    children.push(hooks);
    let hooksOut = '';
    hooks.stdout.on('data', (d) => {
      hooksOut += d;
    });
    hooks.stderr.on('data', (d) => {
      hooksOut += d;
    });
    await eventually(() => hooksOut.includes('listening'), 10_000, 'the receiver listening');
    const notify = await sh(snippet('notify-and-top-up'), { CARD_ID: cardId, HOOKS_PORT: hooksPort });
    assert.equal(notify.code, 0, notify.stderr);
    // The receiver prints each event's payload (issue 43.15): the top-up's amount, its card number masked.
    const printed = (type: string) =>
      [...hooksOut.matchAll(new RegExp(`^verified ${type.replace('.', '\\.')} (evt_\\w+) (\\{.*\\})$`, 'gm'))].map((m) => {
        const event = JSON.parse(m[2] as string) as Record<string, unknown>;
        assert.equal(event.eventId, m[1]);
        return event;
      });
    const topUpPrinted = () => printed('trade').some((e) => e.amount === 25 && e.currency === 'EUR' && e.tradeType === 100);
    await eventually(topUpPrinted, 15_000, 'a verified trade callback').catch((err: Error) => {
      throw new Error(
        `${err.message}\nthe receiver printed:\n${hooksOut}\nthe service printed (last lines):\n${service.output().slice(-4000)}`,
      );
    });
    assert.doesNotMatch(hooksOut, /rejected/);
    // A forged one is refused by the same receiver.
    const forged = await fetch(`http://127.0.0.1:${hooksPort}/hooks`, {
      method: 'POST',
      headers: { 'webhook-id': 'evt_x', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': 'v1,AAAA' },
      body: '{"type":"trade"}',
    });
    assert.equal(forged.status, 400);
    for (const event of printed('trade')) assert.match(String(event.cardNo), /^\d{6}\*{6}\d{4}$/);
    // A full card number (none is ever sent; the receiver masks the shape all the same), signed as the service signs.
    const pan = '4242424242424242';
    const body = JSON.stringify({ type: 'trade', eventId: 'evt_masktest', note: `card ${pan}`, cardNo: pan });
    const signed = new Webhook(demoFile.webhookSecret).sign('evt_masktest', new Date(), body);
    const unmasked = await fetch(`http://127.0.0.1:${hooksPort}/hooks`, {
      method: 'POST',
      headers: { 'webhook-id': 'evt_masktest', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': signed },
      body,
    });
    assert.equal(unmasked.status, 200);
    await eventually(() => hooksOut.includes('evt_masktest'), 5000, 'the masked event printed');
    assert.ok(hooksOut.includes('"note":"card 424242******4242","cardNo":"424242******4242"'), hooksOut);
    assert.ok(!hooksOut.includes(pan));

    // 7, a 3-D Secure challenge: C, the code printed by the receiver (threeDs.otp), typed by the sandbox's complete: Y.
    const challenge = await sh(snippet('threeds-challenge'), { CARD_ID: cardId });
    assert.equal(challenge.code, 0, `${challenge.stderr}\n${challenge.stdout}`);
    const [status, acsTransId] = challenge.stdout.trim().split('\n');
    assert.equal(status, 'C', challenge.stdout);
    assert.match(String(acsTransId), /^[0-9a-f-]{36}$/);
    const otpOf = () => printed('threeDs.otp').find((e) => e.acsTransID === acsTransId);
    await eventually(() => otpOf() !== undefined, 15_000, 'the threeDs.otp callback printed');
    const otp = otpOf() as Record<string, unknown>;
    assert.deepEqual([otp.merchantName, otp.amount, otp.currency], ['Fahrrad Haus', 9.9, 'EUR']);
    // ... and the value the sandbox's DS hands on from the RReq pays the purchase (approved, its authentication shown).
    const complete = await sh(snippet('threeds-complete'), { ACS_TRANS_ID: String(acsTransId), OTP: String(otp.code), CARD_ID: cardId });
    assert.equal(complete.code, 0, `${complete.stderr}\n${complete.stdout}`);
    assert.match(complete.stdout, /^Y\n/);
    assert.match(
      complete.stdout,
      new RegExp(`\\{\\s*acsTransID: '${acsTransId}',\\s*transStatus: 'Y',\\s*eci: '05',\\s*method: 'otp'\\s*\\}`),
    );
    await eventually(
      () => printed('threeDs.result').some((e) => e.acsTransID === acsTransId && e.transStatus === 'Y'),
      15_000,
      'the threeDs.result callback printed',
    );

    // 8. KYC, three ways: each submission's kyc.result callbacks reach the receiver, and the approved cardholder gets a card.
    const kycCurl = await sh(snippet('curl-kyc'), { HOOKS_PORT: hooksPort });
    assert.equal(kycCurl.code, 0, kycCurl.stderr);
    const kycLines = kycCurl.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.equal(kycLines.length, 3, kycCurl.stdout);
    assert.deepEqual([kycLines[0].code, kycLines[0].model], ['0', null]);
    assert.equal(kycLines[1].model.kycStatus, 'approved');
    assert.match(kycLines[1].model.holderId, /^hld_\w+$/);
    assert.equal(kycLines[2].model.status, 'active');
    for (const [name, file] of [
      ['node-kyc', 'kyc-node.mjs'],
      ['sdk-kyc', 'kyc-sdk.mjs'],
    ] as const) {
      writeFileSync(join(work, file), snippet(name));
      const ran = await run(process.execPath, [file], work, { ...env, HOOKS_PORT: hooksPort });
      assert.equal(ran.code, 0, ran.stderr);
      assert.match(ran.stdout, /^KYC KYC-(NODE|SDK)-1 approved: cardholder hld_\w+\ncard card_\w+ \d{6}\*+\d{4} active\n$/, name);
    }
    const decided = (requestNo: string) =>
      printed('kyc.result')
        .filter((e) => e.requestNo === requestNo)
        .map((e) => e.kycStatus);
    for (const requestNo of ['KYC-CURL-1', 'KYC-NODE-1', 'KYC-SDK-1']) {
      await eventually(() => decided(requestNo).includes('approved'), 15_000, `the kyc.result callbacks of ${requestNo}`);
      // At least once, and each step of the review: into review, then approved.
      assert.deepEqual([...new Set(decided(requestNo))].sort(), ['approved', 'reviewing'], requestNo);
    }

    // 7 in Python: the same receiver, the notify URL pointed at it, the same top-up.
    if (hasPython) {
      const pyPort = String(await freePort());
      writeFileSync(join(work, 'hooks.py'), snippet('py-webhook-receiver'));
      const pyHooks = spawn(PYTHON, ['hooks.py'], { cwd: work, env: { ...process.env, ...pyEnv, HOOKS_PORT: pyPort } });
      children.push(pyHooks);
      let pyOut = '';
      pyHooks.stdout.on('data', (d) => {
        pyOut += d;
      });
      pyHooks.stderr.on('data', (d) => {
        pyOut += d;
      });
      await eventually(() => pyOut.includes('listening'), 10_000, 'the Python receiver listening');
      const again = await sh(snippet('notify-and-top-up'), { CARD_ID: cardId, HOOKS_PORT: pyPort });
      assert.equal(again.code, 0, again.stderr);
      // The whole payload, as the Node receiver prints it (issue 43c): the card number masked.
      const pyTrade = /^verified trade evt_\w+ \{"type":"trade",.*"cardNo":"\d{6}\*{6}\d{4}".*"amount":25,.*"eventId":"evt_\w+"/m;
      await eventually(() => pyTrade.test(pyOut), 15_000, 'a trade callback verified in Python, its payload printed').catch(
        (err: Error) => {
          throw new Error(`${err.message}\nthe Python receiver printed:\n${pyOut}`);
        },
      );
      assert.doesNotMatch(pyOut, /rejected/);
      const forgedPy = await fetch(`http://127.0.0.1:${pyPort}/hooks`, {
        method: 'POST',
        headers: { 'webhook-id': 'evt_x', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': 'v1,AAAA' },
        body: '{"type":"trade"}',
      });
      assert.equal(forgedPy.status, 400);
      await eventually(() => pyOut.includes('rejected: no matching signature found'), 5_000, 'the forged callback rejected');
    }

    // 3c. A purchase over the card network link (last: it adds to the card's history counted above).
    const overLink = await sh(snippet('link-purchase'), { CARD_ID: cardId });
    assert.equal(overLink.code, 0, `${overLink.stderr}\n${overLink.stdout}`);
    assert.match(overLink.stdout, /^sent to 127\.0\.0\.1:\d+: 0100 authorization request$/m);
    assert.match(overLink.stdout, /^received in \d+ ms: 0110 authorization response$/m);
    assert.match(overLink.stdout, /^sent to 127\.0\.0\.1:\d+: 0220 financial advice$/m);
    assert.match(overLink.stdout, /^received in \d+ ms: 0230 financial advice response$/m);
    assert.equal(overLink.stdout.match(/^00 approved$/gm)?.length, 2, overLink.stdout);
    assert.match(overLink.stdout, /^\s+2 {2}primary account number\s+\d{6}\*+\d{4}$/m);
    assert.match(overLink.stdout, /92 CVV2 \(not shown\)/);
    // Each prints the transaction it made (issue 43): the clear, its payment and the authorization it cleared.
    assert.match(overLink.stdout, /^tradeId trd_\w+ \(authorization\)$/m);
    assert.match(overLink.stdout, /^tradeId trd_\w+ \(payment of trd_\w+\)$/m);

    // 3d. A 3-D Secure purchase: authenticated (frictionless, the low-value exemption), authorized with eci and
    // authenticationValue, tradeQuery shows it, the value a second time refused.
    const threeDs = await sh(snippet('threeds-purchase'), { CARD_ID: cardId });
    assert.equal(threeDs.code, 0, `${threeDs.stderr}\n${threeDs.stdout}`);
    assert.match(threeDs.stdout, /^Y\n/);
    assert.match(threeDs.stdout, /\{\s*acsTransID: '[0-9a-f-]{36}',\s*transStatus: 'Y',\s*eci: '0[25]',\s*method: 'frictionless'\s*\}/);
    assert.match(threeDs.stdout, /"code": "2732",\n\s+"msg": "authenticationValue: refused, already used by an approved authorization"/);
    assert.match(threeDs.stdout, /"declineReason": "authentication_failed"/);
  });
});
