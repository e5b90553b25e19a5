import { z } from 'zod';
import { text } from '../../lib/schemas.ts';

/** The images a logo may be. Not SVG: an SVG document can carry script. */
export const LOGO_CONTENT_TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'] as const;
export type LogoContentType = (typeof LOGO_CONTENT_TYPES)[number];
/** The most bytes a logo may have (decoded). */
export const MAX_LOGO_BYTES = 256 * 1024;

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
/** How many bytes a base64 text (checked against BASE64) decodes to. */
const decodedLength = (value: string) => (value.length / 4) * 3 - (value.endsWith('==') ? 2 : value.endsWith('=') ? 1 : 0);

/** What the first bytes say the image is (its magic number), or undefined for anything else (SVG and HTML included). */
export function sniffImage(bytes: Uint8Array): LogoContentType | undefined {
  const ascii = (from: number, to: number) => String.fromCharCode(...bytes.subarray(from, to));
  if (bytes.length >= 8 && ascii(0, 8) === '\x89PNG\r\n\x1a\n') return 'image/png';
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
  if (bytes.length >= 6 && (ascii(0, 6) === 'GIF87a' || ascii(0, 6) === 'GIF89a')) return 'image/gif';
  if (bytes.length >= 12 && ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') return 'image/webp';
  return undefined;
}

/** Why the first bytes of a logo do not make it a `contentType` image, or undefined when they do. */
function bytesRefusal(data: string, contentType: LogoContentType): string | undefined {
  const head = Buffer.from(data.slice(0, 24), 'base64');
  const sniffed = sniffImage(head);
  if (sniffed === contentType) return undefined;
  if (sniffed) return `the bytes are ${sniffed}, not ${contentType}`;
  const start = head
    .toString('latin1')
    .replace(/^\uFEFF|^\xEF\xBB\xBF/, '')
    .trimStart();
  if (start.startsWith('<')) return 'the bytes are markup (SVG, XML or HTML), which is refused: send a PNG, JPEG, WebP or GIF';
  return `the bytes are not a ${contentType} image`;
}

export const PutLogoInputSchema = z
  .strictObject({
    id: z.uuid(),
    content_type: z
      .enum(LOGO_CONTENT_TYPES)
      .meta({ description: 'What the image is; its first bytes must say the same. SVG is refused (it can carry script).' }),
    data: text().meta({
      description: `The image, base64 (standard alphabet, padded), at most ${MAX_LOGO_BYTES} bytes decoded`,
      format: 'byte',
      // a real 1×1 PNG
      example: 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
    }),
  })
  .superRefine((input, ctx) => {
    const { data } = input;
    let problem: string | undefined;
    if (data.length % 4 !== 0 || !BASE64.test(data)) problem = 'not base64 (standard alphabet, padded, no line breaks)';
    else if (data.length === 0) problem = 'empty';
    else if (decodedLength(data) > MAX_LOGO_BYTES) problem = `larger than ${MAX_LOGO_BYTES} bytes (256 KiB) decoded`;
    else problem = bytesRefusal(data, input.content_type);
    if (problem) ctx.addIssue({ code: 'custom', path: ['data'], message: problem });
  });
export type PutLogoInput = z.infer<typeof PutLogoInputSchema>;

export const LogoSchema = z
  .object({
    application_id: z.uuid(),
    logo_url: text().meta({
      description: 'Where the logo is served; also settings.branding.logo_url',
      example: 'https://auth.example.com/a/01937c4e-8a2b-7c3d-9e4f-5a6b7c8d9e0f/logo?v=4a3b5f1e0c9d',
    }),
    content_type: z.enum(LOGO_CONTENT_TYPES),
    size: z.number().int().meta({ description: 'Bytes' }),
    sha256: text().meta({
      description: 'The hex SHA-256 of the bytes (the ETag it is served with)',
      example: '4a3b5f1e0c9d2b7a8e6f5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a',
    }),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'ApplicationLogo' });
