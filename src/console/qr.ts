import { encode } from 'uqr';
import { esc } from './view.js';

/** Quiet zone around the code, in modules: the four the QR standard asks for, so every phone camera finds it. */
const QUIET = 4;
/** Screen pixels per module: a version-7 otpauth code (45 modules, quiet zone included) draws at 225 px. */
const SCALE = 5;

/**
 * `text` as a QR code, an SVG drawn here on the server (issue 43.11): an authenticator app scans the
 * TOTP set-up's otpauth:// address instead of the key being typed. Inline in the page, so nothing
 * is fetched from anywhere (the console's CSP allows no outside image and no script), and no
 * `style` attribute (the CSP admits the console's one stylesheet only): colours are the SVG's own
 * attributes. Error correction M (15 %): a screen photographed at an angle still reads.
 */
export function qrSvg(text: string, label: string): string {
  const { size, data } = encode(text, { ecc: 'M', border: QUIET });
  // One path, each row's dark runs as rectangles: a few kilobytes instead of one element per module.
  let path = '';
  data.forEach((row, y) => {
    for (let x = 0; x < size; x++) {
      if (!row[x]) continue;
      let run = 1;
      while (x + run < size && row[x + run]) run++;
      path += `M${x} ${y}h${run}v1h-${run}z`;
      x += run - 1;
    }
  });
  return `<svg xmlns="http://www.w3.org/2000/svg" class="qr" viewBox="0 0 ${size} ${size}" width="${size * SCALE}" height="${size * SCALE}" role="img" aria-label="${esc(label)}" shape-rendering="crispEdges"><rect width="${size}" height="${size}" fill="#fff"/><path fill="#000" d="${path}"/></svg>`;
}
