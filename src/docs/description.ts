/**
 * The OpenAPI document's description: what a merchant developer needs before the first request,
 * shown at the top of the API reference (/docs). The full rules are in docs/signing.md and
 * docs/errors.md; this is their summary, kept short enough to read before scrolling.
 */
export const API_DESCRIPTION = `Card-program service for merchants: cardholders, KYC sharing, virtual cards, their transactions and a hosted card page.

## Signing every request

Every operation is \`POST\` with a JSON body that carries your \`appId\` and a \`sign\`:

1. take the body's top-level fields except \`sign\`, and drop those that are \`null\` or \`""\`;
2. sort them by name;
3. write each as \`name=value\` and join them with \`&\`: strings as sent (Base64 fields as Base64), numbers and booleans as JSON, objects and arrays as canonical JSON (RFC 8785); in each value's text, \`%\` is written \`%25\` and \`&\` \`%26\` (nothing else is escaped), so no value can pass for another field;
4. \`sign\` is the lowercase hex HMAC-SHA256 of that string with your secret (or, for an RSA merchant, the Base64 RSA-SHA256 signature with your private key).

Example, with the secret \`sk_test_5f3c0d7e9a1b4c2d8e6f0a1b2c3d4e5f\`: the body \`{"appId":"mch_0123456789abcdef","email":"alice@example.com"}\` has the signing string \`appId=mch_0123456789abcdef&email=alice@example.com\` and the sign \`534fe99247af6aa210b5ad738f1f5610867bc53c25d01daa2e0e0a30e95a5665\`.

\`randomStr\` (32 letters or digits) is new for every request: a write sent again with the same one is answered once, with the first answer. Sign a \`timestamp\` (Unix milliseconds) into every request: it must be within 5 minutes of the service's clock (\`1007\` outside), and **in production it is required on every operation** (\`1007\` without; \`CARDPROGRAM_REQUIRE_TIMESTAMP\`), so a captured request cannot be replayed later. Where it is required, a read signed before the service's store of spent read \`randomStr\` values last started empty (a restart) is \`1007\` too, "timestamp is before the replay store's watermark …": sign it again with the current time (the SDK does). The login-free page link (4.4) also takes a single-use \`randomStr\`, required in production.

**In the sandbox a signature error (\`1006\`) answers the signing string the service computed and the fields it signed**, in \`detail\`: compare it with yours. The full rules and more test vectors: docs/signing.md.

## Answers and errors

A success is \`{"code":"0","msg":"success","model":…}\` (the interface's four operations answer their own shapes). A failure is the error envelope \`{"code","msg","model":null,"traceId","success":false,"error":true}\` with an HTTP status for its class; for a bad field \`msg\` names it and the rule it broke (docs/errors.md).

Each merchant may send a limited number of signed requests a second (100 by default); past it the answer is \`1009\` (HTTP 429) with a \`Retry-After\` header in seconds. A \`503\` (database unavailable) also carries \`Retry-After\` and is safe to retry: a write with the same \`randomStr\`, a read with a new one.

Each operation below shows an example body: replace \`appId\`, the ids and \`randomStr\` with yours and compute \`sign\`, or send it with \`npx cardprogram call OPERATION --data '…'\`, which signs as the sandbox demo merchant.`;
