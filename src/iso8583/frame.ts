/**
 * The link's framing (decisions §12.1): each message is preceded by a 2-byte big-endian length,
 * the message's bytes excluding the two. A frame longer than the limit, or of length 0, is a
 * framing error: the stream cannot be trusted after it, and the connection is closed.
 */

export const DEFAULT_MAX_FRAME = 4096;

export class FrameError extends Error {
  override name = 'FrameError';
}

/** The frame of one message: its length, then its bytes. */
export function frame(body: Uint8Array): Buffer {
  if (body.length === 0 || body.length > 0xffff) throw new FrameError(`a frame holds 1 to 65535 bytes, not ${body.length}`);
  const out = Buffer.allocUnsafe(body.length + 2);
  out.writeUInt16BE(body.length, 0);
  out.set(body, 2);
  return out;
}

/**
 * Cuts a byte stream into frames. It holds at most one frame's bytes (the limit plus 2): a peer
 * that announces more is refused at its header, before anything is buffered.
 */
export class FrameReader {
  private buf: Buffer = Buffer.alloc(0);

  constructor(private readonly maxFrame: number = DEFAULT_MAX_FRAME) {}

  /** Whether part of a frame is waiting for the rest. */
  get pending(): boolean {
    return this.buf.length > 0;
  }

  /** Adds bytes; returns the frames they complete. Throws a FrameError on a bad length. */
  push(chunk: Uint8Array): Buffer[] {
    this.buf = this.buf.length === 0 ? Buffer.from(chunk) : Buffer.concat([this.buf, chunk]);
    const frames: Buffer[] = [];
    while (this.buf.length >= 2) {
      const len = this.buf.readUInt16BE(0);
      if (len === 0) throw new FrameError('a frame of length 0');
      if (len > this.maxFrame) throw new FrameError(`a frame of ${len} bytes, over the limit of ${this.maxFrame}`);
      if (this.buf.length < len + 2) break;
      frames.push(this.buf.subarray(2, len + 2));
      this.buf = this.buf.subarray(len + 2);
    }
    if (this.buf.length === 0) this.buf = Buffer.alloc(0);
    return frames;
  }
}
