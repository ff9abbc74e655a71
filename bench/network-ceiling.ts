// The ceiling of this machine for the network link benchmark: a bare TCP server (node:net) that
// reads the same frames, decodes each 0100 with the service's own codec and answers an 0110 with
// the fields the link echoes, 38 and 39 = 00 — no card lookup, no vault, no database. It prints
// {"port": N} when it listens.
import { createServer } from 'node:net';
import { answerMti, decode, encode } from '../src/iso8583/codec.js';
import { FrameReader, frame } from '../src/iso8583/frame.js';

const ECHOED = [3, 4, 6, 7, 11, 12, 13, 32, 33, 37, 41, 42, 49, 51, 70, 90, 95];

const server = createServer((socket) => {
  socket.setNoDelay(true);
  const reader = new FrameReader(4096);
  socket.on('error', () => undefined);
  socket.on('data', (chunk) => {
    for (const bytes of reader.push(chunk)) {
      const msg = decode(bytes);
      const fields = new Map<number, string>();
      for (const f of ECHOED) {
        const v = msg.fields.get(f);
        if (v !== undefined) fields.set(f, v);
      }
      fields.set(38, 'A00001');
      fields.set(39, '00');
      socket.write(frame(encode({ mti: answerMti(msg.mti), fields })));
    }
  });
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as { port: number }).port })}\n`);
});
