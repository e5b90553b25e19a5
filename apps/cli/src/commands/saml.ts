import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { SamlConnection } from '@gatehouse/sdk';
import type { Command } from 'commander';
import { parseBoolean } from '../args.ts';
import { readConfig } from '../config.ts';
import { confirm, mustConfirm } from '../confirm.ts';
import { globalOptions, resolveCredentials, secretKeyClient } from '../context.ts';
import { UsageError } from '../errors.ts';
import { present } from '../output.ts';
import { type Column, recordView, tableView } from '../ui/view.ts';
import { registerSamlTestIdp } from './saml-test-idp.ts';

const columns: Column<SamlConnection>[] = [
  { key: 'id', header: 'ID', value: (c) => c.id },
  { key: 'name', header: 'NAME', value: (c) => c.name },
  { key: 'enabled', header: 'ENABLED', value: (c) => (c.enabled ? 'yes' : 'no') },
  { key: 'email_domain', header: 'DOMAIN', value: (c) => c.email_domain ?? '' },
  { key: 'idp_entity_id', header: 'IDP ENTITY ID', value: (c) => c.idp_entity_id },
  { key: 'certificate_expires_at', header: 'CERT EXPIRES', value: (c) => c.certificate_expires_at ?? 'no certificate' },
];

/** What to give the IdP's administrator, after the record. */
const handOver = (c: SamlConnection) =>
  `Give the IdP administrator our SP metadata: ${c.metadata_url}\n` +
  `(or: gatehouse saml metadata ${c.id} > sp-metadata.xml) — ACS URL ${c.acs_url}, entity id ${c.metadata_url}.`;

async function readText(path: string, what: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (error) {
    throw new UsageError(`cannot read ${what} ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

/**
 * An IdP certificate file as the API wants it, base64 DER: PEM (the usual export) is converted; DER is encoded. A file
 * that holds no certificate is refused here, with the reason, before anything is sent.
 */
export async function certificateFromFile(path: string): Promise<string> {
  const bytes = await readText(path, 'the certificate');
  const text = bytes.toString('utf8');
  let der: Buffer;
  if (text.includes('-----BEGIN')) {
    const match = /-----BEGIN CERTIFICATE-----([\s\S]+?)-----END CERTIFICATE-----/.exec(text);
    if (!match) throw new UsageError(`${path} is PEM but holds no CERTIFICATE block (a private key is not a certificate)`);
    der = Buffer.from(match[1]!.replace(/\s+/g, ''), 'base64');
  } else der = bytes;
  try {
    new X509Certificate(der);
  } catch {
    throw new UsageError(`${path} is not an X.509 certificate (PEM or DER)`);
  }
  return der.toString('base64');
}

interface CommonOptions {
  name?: string;
  domain?: string;
  emailAttribute?: string;
  nameAttribute?: string;
  idpInitiated?: boolean;
}

const common = (command: Command) =>
  command
    .option('--domain <domain>', "the customer's email domain: its emails sign in here, and only they")
    .option('--email-attribute <name>', 'the SAML attribute carrying the email (default: email, mail or an email NameID)')
    .option('--name-attribute <name>', "the SAML attribute carrying the person's name")
    .option('--idp-initiated <true|false>', 'accept sign-ins started from the IdP (default false)', parseBoolean);

const commonInput = (o: CommonOptions) => ({
  ...(o.domain !== undefined ? { email_domain: o.domain } : {}),
  ...(o.emailAttribute !== undefined ? { email_attribute: o.emailAttribute } : {}),
  ...(o.nameAttribute !== undefined ? { name_attribute: o.nameAttribute } : {}),
  ...(o.idpInitiated !== undefined ? { allow_idp_initiated: o.idpInitiated } : {}),
});

export function registerSaml(program: Command): void {
  const saml = program.command('saml').description('Manage SAML SSO connections (one per customer identity provider)');
  registerSamlTestIdp(saml);

  common(
    saml
      .command('create')
      .description("Create a connection from the IdP's metadata (file or URL), or from its entity id, SSO URL and certificate")
      .option('--metadata <file>', "the IdP's metadata XML (EntityDescriptor)")
      .option('--metadata-url <url>', "the IdP's metadata URL (https), fetched once by the server")
      .option('--name <name>', 'a name for the connection (default: the IdP entity id)')
      .option('--entity-id <id>', "the IdP's entity id (without metadata)")
      .option('--sso-url <url>', "the IdP's SSO URL, HTTP-Redirect binding (without metadata)")
      .option('--cert <file>', "the IdP's signing certificate, PEM or DER (without metadata)"),
  ).action(
    async (
      options: CommonOptions & { metadata?: string; metadataUrl?: string; entityId?: string; ssoUrl?: string; cert?: string },
      command: Command,
    ) => {
      const sources = [options.metadata, options.metadataUrl, options.entityId ?? options.ssoUrl ?? options.cert].filter(
        (v) => v !== undefined,
      );
      if (sources.length !== 1) {
        throw new UsageError('pass exactly one of --metadata <file>, --metadata-url <url>, or --entity-id/--sso-url/--cert');
      }
      const extra = { ...commonInput(options), ...(options.name !== undefined ? { name: options.name } : {}) };
      let create: (gatehouse: Awaited<ReturnType<typeof secretKeyClient>>) => Promise<SamlConnection>;
      if (options.metadata !== undefined) {
        const metadata_xml = (await readText(options.metadata, 'the metadata')).toString('utf8');
        create = (g) => g.saml.connections.createFromMetadata({ metadata_xml, ...extra });
      } else if (options.metadataUrl !== undefined) {
        const metadata_url = options.metadataUrl;
        create = (g) => g.saml.connections.createFromMetadata({ metadata_url, ...extra });
      } else {
        if (!options.entityId || !options.ssoUrl || !options.cert) {
          throw new UsageError('without metadata, pass all of --entity-id, --sso-url and --cert');
        }
        const idp_certificate = await certificateFromFile(options.cert);
        const input = {
          name: options.name ?? options.entityId,
          idp_entity_id: options.entityId,
          idp_sso_url: options.ssoUrl,
          idp_certificate,
          ...commonInput(options),
        };
        create = (g) => g.saml.connections.create(input);
      }
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Creating the SAML connection',
        () => create(gatehouse),
        (c) => recordView(c, handOver(c)),
      );
    },
  );

  saml
    .command('list')
    .description('List SAML connections, newest first')
    .action(async (_options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Listing SAML connections',
        () => gatehouse.saml.connections.list(),
        (rows) => tableView(columns, rows, 'No SAML connections.'),
      );
    });

  saml
    .command('show')
    .description('Show a SAML connection')
    .argument('<id>', 'connection id')
    .action(async (id: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Fetching the SAML connection',
        () => gatehouse.saml.connections.get({ id }),
        (c) => recordView(c),
      );
    });

  common(
    saml
      .command('update')
      .description('Change a connection; the IdP certificate is always sent again (it is never read back)')
      .argument('<id>', 'connection id')
      .requiredOption('--cert <file>', "the IdP's signing certificate, PEM or DER")
      .option('--name <name>', 'new name')
      .option('--entity-id <id>', "the IdP's entity id")
      .option('--sso-url <url>', "the IdP's SSO URL"),
  ).action(
    async (id: string, options: CommonOptions & { cert: string; entityId?: string; ssoUrl?: string }, command: Command) => {
      const idp_certificate = await certificateFromFile(options.cert);
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Updating the SAML connection',
        async () => {
          const current = await gatehouse.saml.connections.get({ id });
          return gatehouse.saml.connections.update({
            id,
            idp_certificate,
            name: options.name ?? current.name,
            idp_entity_id: options.entityId ?? current.idp_entity_id,
            idp_sso_url: options.ssoUrl ?? current.idp_sso_url,
            ...commonInput(options),
          });
        },
        (c) => recordView(c),
      );
    },
  );

  for (const [verb, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    saml
      .command(verb)
      .description(enabled ? 'Enable a connection' : 'Disable a connection: every sign-in through it is refused')
      .argument('<id>', 'connection id')
      .action(async (id: string, _options, command: Command) => {
        const gatehouse = await secretKeyClient(command);
        await present(
          command,
          enabled ? 'Enabling the connection' : 'Disabling the connection',
          () => (enabled ? gatehouse.saml.connections.enable({ id }) : gatehouse.saml.connections.disable({ id })),
          (c) => recordView(c),
        );
      });
  }

  saml
    .command('delete')
    .description("Delete a connection and its users' links to it (the users stay); there is no undo")
    .argument('<id>', 'connection id')
    .option('-y, --yes', 'do not ask for confirmation (required when standard input is not a terminal)')
    .action(async (id: string, options: { yes?: boolean }, command: Command) => {
      const ask = mustConfirm(options.yes, 'deleting a connection stops every sign-in through it');
      const gatehouse = await secretKeyClient(command);
      if (ask) {
        const { name } = await gatehouse.saml.connections.get({ id });
        if (!(await confirm(`Delete SAML connection "${name}" (${id})? There is no undo.`))) {
          throw new Error('cancelled: nothing was deleted');
        }
      }
      await present(
        command,
        'Deleting the connection',
        () => gatehouse.saml.connections.delete({ id }),
        (deleted) => ({ kind: 'message', text: `Deleted SAML connection ${deleted.id}` }),
      );
    });

  saml
    .command('metadata')
    .description("Print our SP metadata XML for a connection (hand it to the IdP's administrator)")
    .argument('<id>', 'connection id')
    .action(async (id: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      // Through the SDK first: the connection must be this application's (the metadata route itself is public).
      await gatehouse.saml.connections.get({ id });
      const { baseUrl } = resolveCredentials(globalOptions(command), await readConfig());
      const response = await fetch(`${baseUrl}/v1/saml/metadata/${encodeURIComponent(id)}`);
      if (!response.ok) throw new Error(`the server answered ${response.status} for the metadata of ${id}`);
      process.stdout.write(await response.text());
    });
}
