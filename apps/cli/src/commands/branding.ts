import { readFile } from 'node:fs/promises';
import type { Application } from '@gatehouse/sdk';
import { type Command, Option } from 'commander';
import { readConfig } from '../config.ts';
import { applicationClient, globalOptions, resolveCredentials } from '../context.ts';
import { UsageError } from '../errors.ts';
import { present } from '../output.ts';
import { recordView } from '../ui/view.ts';

type Branding = Application['settings']['branding'];

/** The largest logo the server takes (decoded). */
const MAX_LOGO_BYTES = 256 * 1024;

/** What an image file is, from its first bytes (the server checks the same), or undefined. */
export function imageTypeOf(bytes: Uint8Array): 'image/png' | 'image/jpeg' | 'image/webp' | 'image/gif' | undefined {
  const ascii = (from: number, to: number) => Buffer.from(bytes.subarray(from, to)).toString('latin1');
  if (ascii(0, 8) === '\x89PNG\r\n\x1a\n') return 'image/png';
  if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'image/jpeg';
  if (ascii(0, 6) === 'GIF87a' || ascii(0, 6) === 'GIF89a') return 'image/gif';
  if (ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') return 'image/webp';
  return undefined;
}

/** `gatehouse apps branding …` and `gatehouse apps sign-in-url`: the look and the address of the hosted pages. */
export function registerBranding(apps: Command): void {
  const branding = apps
    .command('branding')
    .description('Show or change the branding of the hosted sign-in pages (display name, logo, colour, theme, support address)');

  branding
    .command('show')
    .description("Show the application's branding")
    .action(async (_options, command: Command) => {
      const { gatehouse, applicationId } = await applicationClient(command);
      await present(
        command,
        'Fetching the branding',
        async () => (await gatehouse.applications.get({ id: applicationId })).settings.branding,
        (b) => recordView(b),
      );
    });

  branding
    .command('set')
    .description('Change the given fields of the branding (the others stay); an empty value clears a field')
    .option('--display-name <name>', 'the name shown on the pages (at most 100 characters)')
    .option('--logo-url <url>', 'an https URL of the logo (or upload one: gatehouse apps branding logo <file>)')
    .option('--primary-color <#rrggbb>', 'the primary colour, e.g. #4f46e5')
    .addOption(new Option('--theme <theme>', 'light, dark, or auto (follows the visitor)').choices(['light', 'dark', 'auto']))
    .option('--support-email <address>', 'the address shown to people who need help signing in')
    .action(
      async (
        options: {
          displayName?: string;
          logoUrl?: string;
          primaryColor?: string;
          theme?: Branding['theme'];
          supportEmail?: string;
        },
        command: Command,
      ) => {
        // An empty value clears the field (null).
        const changes: Partial<Branding> = {};
        if (options.displayName !== undefined) changes.display_name = options.displayName || null;
        if (options.logoUrl !== undefined) changes.logo_url = options.logoUrl || null;
        if (options.primaryColor !== undefined) changes.primary_color = options.primaryColor || null;
        if (options.theme !== undefined) changes.theme = options.theme;
        if (options.supportEmail !== undefined) changes.support_email = options.supportEmail || null;
        if (Object.keys(changes).length === 0) {
          throw new UsageError('nothing to change: pass --display-name, --logo-url, --primary-color, --theme or --support-email');
        }
        const { gatehouse, applicationId } = await applicationClient(command);
        await present(
          command,
          'Updating the branding',
          async () => {
            // A PATCH replaces the whole branding object: the fields not given are sent as they are.
            const current = (await gatehouse.applications.get({ id: applicationId })).settings.branding;
            const app = await gatehouse.applications.update({
              id: applicationId,
              settings: { branding: { ...current, ...changes } },
            });
            return app.settings.branding;
          },
          (b) => recordView(b),
        );
      },
    );

  branding
    .command('logo')
    .description('Upload the logo (a PNG, JPEG, WebP or GIF file of at most 256 KiB; Gatehouse serves it), or remove it')
    .argument('[file]', 'the image file')
    .option('--remove', 'remove the logo (uploaded or linked)')
    .action(async (file: string | undefined, options: { remove?: boolean }, command: Command) => {
      if (options.remove && file) throw new UsageError('pass either a file or --remove, not both');
      if (!options.remove && !file) throw new UsageError('pass the image file to upload, or --remove');
      if (options.remove) {
        const { gatehouse, applicationId } = await applicationClient(command);
        await present(
          command,
          'Removing the logo',
          () => gatehouse.applications.branding.removeLogo({ id: applicationId }),
          () => ({ kind: 'message', text: 'Removed the logo' }),
        );
        return;
      }
      let bytes: Buffer;
      try {
        bytes = await readFile(file!);
      } catch (error) {
        throw new UsageError(`cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
      }
      const contentType = imageTypeOf(bytes);
      if (!contentType) throw new UsageError(`${file} is not a PNG, JPEG, WebP or GIF image (SVG is not accepted)`);
      if (bytes.length > MAX_LOGO_BYTES) {
        throw new UsageError(`${file} is ${bytes.length} bytes; a logo may be at most ${MAX_LOGO_BYTES} (256 KiB)`);
      }
      const { gatehouse, applicationId } = await applicationClient(command);
      await present(
        command,
        'Uploading the logo',
        () =>
          gatehouse.applications.branding.setLogo({
            id: applicationId,
            content_type: contentType,
            data: bytes.toString('base64'),
          }),
        (logo) => recordView(logo, 'settings.branding.logo_url now points at the uploaded logo.'),
      );
    });

  apps
    .command('sign-in-url')
    .description("Print the address of the application's hosted sign-in page (and of each verified custom domain)")
    .action(async (_options, command: Command) => {
      const credentials = resolveCredentials(globalOptions(command), await readConfig());
      const { gatehouse, applicationId } = await applicationClient(command);
      await present(
        command,
        'Finding the sign-in page',
        async () => {
          const [base, domains] = await Promise.all([
            publicBaseUrl(credentials.baseUrl, applicationId),
            gatehouse.domains.list({ id: applicationId }),
          ]);
          return {
            url: `${base}/a/${applicationId}/sign-in`,
            custom_domain_urls: domains.filter((d) => d.status === 'verified').map((d) => `https://${d.domain}/sign-in`),
          };
        },
        (urls) => ({ kind: 'message', text: [urls.url, ...urls.custom_domain_urls].join('\n') }),
      );
    });
}

/**
 * The server's public base URL (its GATEHOUSE_BASE_URL, which may differ from the address the CLI reaches it at):
 * read from the application's OpenID provider, whose issuer is `{base}/oauth2/{application id}`.
 */
async function publicBaseUrl(baseUrl: string, applicationId: string): Promise<string> {
  const suffix = `/oauth2/${applicationId}`;
  let response: Response;
  try {
    response = await fetch(`${baseUrl}${suffix}/.well-known/openid-configuration`);
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause;
    throw new Error(`could not reach ${baseUrl} (${cause?.code ?? (error as Error).message}); is the server running?`);
  }
  const issuer = response.ok ? ((await response.json()) as { issuer?: unknown }).issuer : undefined;
  if (typeof issuer !== 'string' || !issuer.endsWith(suffix)) {
    throw new Error(`${baseUrl} did not answer the application's OpenID configuration (HTTP ${response.status})`);
  }
  return issuer.slice(0, -suffix.length);
}
