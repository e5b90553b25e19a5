import qrcode from 'qrcode-generator';
import { type Html, html } from './html.ts';

const QUIET_ZONE = 4;

/**
 * A QR code as inline SVG, drawn here from the encoder's modules (no image request, no script; the CSP allows inline
 * SVG markup): one path of unit squares on a white square with the standard quiet zone. `label` names it for screen
 * readers. Error correction M, the usual for otpauth URIs.
 */
export function qrSvg(text: string, label: string): Html {
  const qr = qrcode(0, 'M');
  qr.addData(text);
  qr.make();
  const count = qr.getModuleCount();
  const size = count + QUIET_ZONE * 2;
  let path = '';
  for (let row = 0; row < count; row++) {
    for (let col = 0; col < count; col++) {
      if (qr.isDark(row, col)) path += `M${col + QUIET_ZONE},${row + QUIET_ZONE}h1v1h-1z`;
    }
  }
  return html`<svg class="qr" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${size} ${size}" width="200" height="200" role="img" aria-label="${label}" shape-rendering="crispEdges"><rect width="${size}" height="${size}" fill="#fff"/><path d="${path}" fill="#000"/></svg>`;
}
