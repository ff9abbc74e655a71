import { createRequire } from 'node:module';
import type { Socket } from 'node:net';

/**
 * An acquirer written independently of this codebase (issue 28, "Done when"): the published
 * `iso_8583` package (npm, a devDependency) packs the requests and unpacks the answers; only the
 * socket and the 2-byte length are this helper's. Used by the link's peer test, the 3-D Secure
 * authorization test and the ACS's acceptance.
 */
interface IsoPack {
  getBufferMessage(): Buffer | { error: string };
  getIsoJSON(buffer: Buffer, config: { bitmapEncoding: 'utf8' }): Record<string, string> & { error?: string };
}
type IsoConstructor = new (message?: Record<string, string>, formats?: Record<string, unknown>) => IsoPack;
const Iso8583 = createRequire(import.meta.url)('iso_8583') as IsoConstructor;

/** The link's bitmaps are ASCII hexadecimal (decisions §12.2): the package's `an` bitmap. */
const FORMATS = { 1: { ContentType: 'an', Label: 'Bitmap', LenType: 'fixed', MaxLen: 32 } };

/**
 * The package's unpacker reads an ASCII bitmap as 32 characters always (primary and secondary);
 * the link sends the secondary only when a field 65–128 is present. The peer's framing adds an
 * empty one before unpacking: the only adaptation.
 */
function withSecondaryBitmap(body: Buffer): Buffer {
  const text = body.toString('latin1');
  const first = Number.parseInt(text[4] as string, 16);
  if (first & 8) return body;
  return Buffer.from(
    `${text.slice(0, 4)}${(first | 8).toString(16).toUpperCase()}${text.slice(5, 20)}${'0'.repeat(16)}${text.slice(20)}`,
    'latin1',
  );
}

/** Sends one request packed by the package on the socket, and resolves with the answer it unpacks. */
export function exchange(socket: Socket, request: Record<string, string>): Promise<Record<string, string>> {
  const packed = new Iso8583(request, FORMATS).getBufferMessage();
  if (!Buffer.isBuffer(packed)) throw new Error(`iso_8583 could not pack: ${packed.error}`);
  return new Promise((resolve, reject) => {
    let got = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      got = Buffer.concat([got, chunk]);
      if (got.length < 2 || got.length < 2 + got.readUInt16BE(0)) return;
      socket.off('data', onData);
      const body = withSecondaryBitmap(got.subarray(2, 2 + got.readUInt16BE(0)));
      const header = Buffer.alloc(2);
      header.writeUInt16BE(body.length);
      const json = new Iso8583(undefined, FORMATS).getIsoJSON(Buffer.concat([header, body]), { bitmapEncoding: 'utf8' });
      if (json.error) reject(new Error(`iso_8583 could not unpack: ${json.error}`));
      else resolve(json);
    };
    socket.on('data', onData);
    socket.write(packed);
  });
}
