import assert from 'node:assert/strict';
import { it } from 'node:test';
import { codeAt, stepOf } from '../src/console/totp.js';
import { redactedUrl } from '../src/http/options.js';
import { buildConsole, formBody, hidden, login, makeOperator } from './helpers/console.js';
import { eachDialect } from './helpers/dialects.js';
import { noteSecret } from './helpers/log-audit.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
/** A test card number (sandbox BIN, Luhn-valid), as an operator would paste it into the search. */
const PAN = '4242424242424242';

/** Whether text holds the card number, however it was percent-encoded (up to 4 times) or spaced. */
function holdsPan(text: string): boolean {
  let s = text;
  for (let i = 0; i < 4; i++)
    s = s.replace(/\+/g, ' ').replace(/%([0-9a-fA-F]{2})/g, (_, h: string) => String.fromCharCode(Number.parseInt(h, 16)));
  return /4242[\s.+-]?4242[\s.+-]?4242[\s.+-]?4242/.test(s);
}

// Issue 26.1: an operator whose session ended was sent to /console/login?next=<the URL they
// wanted>, and the log line of that login page carried a search's card number in clear.
eachDialect('console redirects and the log (issue 26.1)', (dialect) => {
  it('a search term never reaches next, the Location or the log, however it is written', async (t) => {
    const lines: string[] = [];
    const h = await buildConsole(t, dialect, {}, { logLines: lines });
    noteSecret('pan', PAN);
    const op = await makeOperator(h, 'ana@example.com', 'viewer');

    // Without a session: the login page's next keeps the page, never its search.
    for (const q of [PAN, '4242 4242 4242 4242', '4242-4242-4242-4242']) {
      const res = await h.app.inject({ method: 'GET', url: `/console/search?q=${encodeURIComponent(q)}&page=2` });
      assert.equal(res.statusCode, 303);
      const location = String(res.headers.location);
      assert.equal(location, `/console/login?next=${encodeURIComponent('/console/search?page=2')}`);
      const page = await h.app.inject({ method: 'GET', url: location });
      assert.equal(page.statusCode, 200);
      assert.ok(!holdsPan(page.body), 'the login page does not carry it either');
    }
    // The parameter's name written another way (?%71= is q=) is left out as well.
    const other = await h.app.inject({ method: 'GET', url: `/console/search?%71=${PAN}` });
    assert.equal(other.headers.location, `/console/login?next=${encodeURIComponent('/console/search')}`);

    // A link made before the fix (or by hand): next holding a search, encoded once, twice, with + for spaces.
    const search = `/console/search?q=${PAN}`;
    for (const next of [
      encodeURIComponent(search),
      encodeURIComponent(encodeURIComponent(search)),
      encodeURIComponent('/console/search?q=4242+4242+4242+4242'),
      encodeURIComponent(`/console/login?next=${encodeURIComponent(search)}`),
      `/console/search%3F%71%3D${PAN}`,
    ]) {
      const page = await h.app.inject({ method: 'GET', url: `/console/login?next=${next}` });
      assert.equal(page.statusCode, 200);
      assert.ok(!holdsPan(page.body), `next=${next} is not put back into the page`);
      // …and logging in from it lands on the page, without the search.
      h.advance();
      const res = await h.app.inject({
        method: 'POST',
        url: '/console/login',
        headers: FORM,
        payload: formBody({
          email: op.email,
          password: op.password,
          code: codeAt(op.secret ?? '', stepOf(h.now.ms)),
          next: hidden(page.body, 'next'),
        }),
      });
      assert.equal(res.statusCode, 303, res.body);
      assert.ok(!holdsPan(String(res.headers.location)), String(res.headers.location));
    }

    // With a session: a search with one match redirects to the card's page (the Location is logged).
    const s = await login(h, op);
    const found = await h.app.inject({ method: 'GET', url: `/console/search?q=${PAN}`, headers: { cookie: s.cookie } });
    assert.ok(!holdsPan(String(found.headers.location ?? '')));

    const logged = lines.filter((l) => l.includes('"/console'));
    assert.ok(logged.length >= 10, 'the requests were logged');
    assert.deepEqual(
      lines.filter((l) => holdsPan(l)),
      [],
      'no log line holds the card number',
    );
    assert.ok(
      lines.some((l) => l.includes('"location":"/console/login?next=%2Fconsole%2Fsearch%3Fpage%3D2"')),
      'a redirect logs its Location',
    );
  });
});

it('redactedUrl: inside next and any parameter holding a URL, encoded any number of times; card numbers anywhere', () => {
  const cases: Array<[string, string]> = [
    ['/console/login?next=%2Fconsole%2Fsearch%3Fq%3D4242424242424242', '/console/login?next=%2Fconsole%2Fsearch%3Fq%3D%5Bredacted%5D'],
    ['/console/login?next=%252Fconsole%252Fsearch%253Fq%253Dx', '/console/login?next=%2Fconsole%2Fsearch%3Fq%3D%5Bredacted%5D'],
    [
      '/console/login?back=https%3A%2F%2Fx.example%2Fpage%2Fopen%3Ftoken%3Dabc',
      '/console/login?back=https%3A%2F%2Fx.example%2Fpage%2Fopen%3Ftoken%3D%5Bredacted%5D',
    ],
    ['/console/audit?from=4242+4242+4242+4242', '/console/audit?from=[redacted]'],
    ['/console/cards/4242424242424242', '/console/cards/[redacted]'],
    ['/console/search?page=2', '/console/search?page=2'],
    ['/console/login?next=%2Fconsole%2Fcards%2Fcard_1', '/console/login?next=%2Fconsole%2Fcards%2Fcard_1'],
  ];
  for (const [url, logged] of cases) assert.equal(redactedUrl(url), logged, url);
  // Whatever it is given, it answers (a lone surrogate cannot be encoded again) and logs no card number.
  const odd = redactedUrl(`/console/login?next=${encodeURIComponent('/console/search?q=')}\ud800%3Fq%3D4242424242424242`);
  assert.ok(!odd.includes('4242424242424242'), odd);
});
