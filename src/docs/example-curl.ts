import { signature, signingString } from '@cardprogram/client';

/**
 * A ready-to-paste signed request (a cardholder creation: a write, so pasting it twice is safe). It
 * signs a `timestamp`, as production requires (issue 43.14): what works here works there, within
 * 5 minutes of `now`. Signed as a merchant signs, by the SDK's signer (`cardprogram demo` and
 * `cardprogram call` sign with it too), which docs/signing.md's vectors hold to the service's.
 */
export function exampleCurl(demo: { appId: string; secret: string; baseUrl: string }, now = Date.now()): string {
  const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
  const body: Record<string, unknown> = {
    appId: demo.appId,
    mobile: '+4915112345678',
    firstName: b64('Alice'),
    lastName: b64('Schmidt'),
    email: 'alice@example.com',
    dateOfBirth: '1990-04-12',
    nationality: 'DE',
    sex: 2,
    countryCode: 'DE',
    town: b64('Berlin'),
    address: b64('Invalidenstrasse 117'),
    postCode: '10115',
    idnoType: 1,
    idno: 'L01X00T47',
    randomStr: 'DemoHolderAlice0000000000000001x'.slice(0, 32),
    timestamp: now,
  };
  body.sign = signature({ secret: demo.secret }, signingString(body));
  return `curl -s -X POST ${demo.baseUrl}/api/network/holderCreate.html -H 'content-type: application/json' -d '${JSON.stringify(body)}'`;
}
