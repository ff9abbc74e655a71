import { createHash } from 'node:crypto';
import type { Static } from 'typebox';
import { DomainError } from '../errors.js';
import { type EvidenceFile, type EvidenceType, MAX_EVIDENCE_BYTES } from './schemas.js';

/** An evidence file checked: its bytes, what they are, their size and digest. */
export interface CheckedEvidence {
  fileName: string;
  contentType: EvidenceType;
  bytes: Buffer;
  sha256: string;
}

/**
 * Base64 with padding, checked without a repeated group: the usual `(?:[…]{4})*` pattern recurses
 * once per group and overflows the stack on a file of megabytes.
 */
const BASE64_CHARS = /^[A-Za-z0-9+/]*={0,2}$/;
const isBase64 = (s: string) => s.length % 4 === 0 && BASE64_CHARS.test(s);
/** An image larger than this (a side, or in all) is refused: a decompression bomb declares huge dimensions in a small file. */
const MAX_SIDE = 20_000;
const MAX_PIXELS = 50_000_000;

const refused = (field: string, rule: string) => new DomainError('disputeEvidence', `${field}: ${rule}`);

/**
 * Checks one evidence file (decisions §13.2): Base64, at most 5 MB decoded, and a PDF, PNG or JPEG
 * by its first bytes and enough of its structure, whatever its declared `contentType` says (which must
 * agree). Why by the bytes: a file is shown to reviewers and sent to the network, and an HTML page
 * or an SVG (script), a zip declared PNG or an image declaring a billion pixels must never pass as
 * evidence. Refused files name their place (`evidence[2].data`).
 */
export function checkEvidence(file: Static<typeof EvidenceFile>, field: string): CheckedEvidence {
  if (!isBase64(file.data)) throw refused(`${field}.data`, 'must be Base64 (standard alphabet, with padding)');
  const bytes = Buffer.from(file.data, 'base64');
  if (bytes.length > MAX_EVIDENCE_BYTES)
    throw refused(`${field}.data`, `is ${bytes.length} bytes decoded; at most ${MAX_EVIDENCE_BYTES} (5 MB)`);
  const actual = sniff(bytes, `${field}.data`);
  if (actual !== file.contentType) throw refused(`${field}.contentType`, `is ${file.contentType}, but the file is ${actual}`);
  return { fileName: file.fileName, contentType: actual, bytes, sha256: createHash('sha256').update(bytes).digest('hex') };
}

/** What a file is by its bytes, or a refusal naming why it is none of the three. */
export function sniff(bytes: Buffer, field: string): EvidenceType {
  if (bytes.subarray(0, 5).toString('latin1') === '%PDF-') return pdf(bytes, field);
  if (bytes.subarray(0, 8).equals(PNG_SIGNATURE)) return png(bytes, field);
  if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return jpeg(bytes, field);
  throw refused(field, 'is not a PDF, PNG or JPEG by its first bytes');
}

/** A PDF: its header's version and its end-of-file marker in its last kilobyte. */
function pdf(bytes: Buffer, field: string): 'application/pdf' {
  if (!/^%PDF-[12]\.[0-9]/.test(bytes.subarray(0, 8).toString('latin1'))) throw refused(field, 'is not a PDF: its header has no version');
  if (
    !bytes
      .subarray(Math.max(0, bytes.length - 1024))
      .toString('latin1')
      .includes('%%EOF')
  )
    throw refused(field, 'is not a complete PDF: no %%EOF at its end');
  return 'application/pdf';
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * A PNG: its chunks walked from the signature (each length within the file), IHDR first with sane
 * dimensions, IEND last and nothing after it.
 */
function png(bytes: Buffer, field: string): 'image/png' {
  if (bytes.length < 8 + 25 || bytes.readUInt32BE(8) !== 13 || bytes.subarray(12, 16).toString('latin1') !== 'IHDR')
    throw refused(field, 'is not a PNG: its first chunk is not the header (IHDR)');
  checkDimensions(bytes.readUInt32BE(16), bytes.readUInt32BE(20), field);
  let at = 8;
  let chunks = 0;
  while (at + 12 <= bytes.length) {
    const length = bytes.readUInt32BE(at);
    const type = bytes.subarray(at + 4, at + 8).toString('latin1');
    if (!/^[A-Za-z]{4}$/.test(type)) throw refused(field, 'is not a PNG: a chunk has no valid type');
    const next = at + 12 + length;
    if (next > bytes.length) throw refused(field, 'is not a complete PNG: a chunk runs past the end of the file');
    chunks++;
    if (type === 'IEND') {
      if (next !== bytes.length) throw refused(field, 'is not a PNG: data follows its end (IEND)');
      if (chunks < 3) throw refused(field, 'is not a PNG: it has no image data');
      return 'image/png';
    }
    at = next;
  }
  throw refused(field, 'is not a complete PNG: no end chunk (IEND)');
}

/** A JPEG: its markers walked to the frame header (SOF), whose dimensions are sane, and its end marker. */
function jpeg(bytes: Buffer, field: string): 'image/jpeg' {
  let end = bytes.length;
  while (end > 2 && bytes[end - 1] === 0x00) end--;
  if (bytes[end - 2] !== 0xff || bytes[end - 1] !== 0xd9) throw refused(field, 'is not a complete JPEG: no end marker');
  let at = 2;
  while (at + 4 <= end) {
    if (bytes[at] !== 0xff) throw refused(field, 'is not a JPEG: a marker is missing');
    const marker = bytes[at + 1] ?? 0;
    if (marker === 0xff) {
      at++;
      continue;
    }
    const length = bytes.readUInt16BE(at + 2);
    // SOF0–SOF15 but DHT (C4), JPG (C8) and DAC (CC): the frame, with height and width.
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      if (at + 9 > end) break;
      checkDimensions(bytes.readUInt16BE(at + 7), bytes.readUInt16BE(at + 5), field);
      return 'image/jpeg';
    }
    at += 2 + length;
  }
  throw refused(field, 'is not a JPEG: no frame header');
}

function checkDimensions(width: number, height: number, field: string): void {
  if (width === 0 || height === 0) throw refused(field, 'is an image without pixels');
  if (width > MAX_SIDE || height > MAX_SIDE || width * height > MAX_PIXELS)
    throw refused(field, `is an image of ${width}×${height} pixels; at most ${MAX_SIDE} a side and ${MAX_PIXELS / 1_000_000} megapixels`);
}
