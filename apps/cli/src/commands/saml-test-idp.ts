import type { SamlConnection } from '@gatehouse/sdk';
import type { Command } from 'commander';
import { readConfig } from '../config.ts';
import { globalOptions, resolveCredentials, secretKeyClient } from '../context.ts';
import { UsageError } from '../errors.ts';

const DEFAULT_NAME = 'Gatehouse test IdP';

/**
 * `gatehouse saml test-idp`: runs a SAML IdP for development on this machine (samlify, a fresh key pair, made-up
 * people to pick from) and creates — or, by its name, reuses — the application's connection to it. It runs until
 * interrupted.
 */
export function registerSamlTestIdp(saml: Command): void {
  saml
    .command('test-idp')
    .description('Run a local SAML identity provider with made-up people, and connect the application to it (development)')
    .option('--port <port>', 'the port the IdP listens on, on localhost', (v) => Number.parseInt(v, 10), 7070)
    .option('--domain <domain>', "the made-up people's email domain (the connection's email_domain)", 'example.test')
    .option('--name <name>', 'the connection’s name (an existing connection of that name is reused)', DEFAULT_NAME)
    .option('--organization <id>', 'the organization whose IdP this is (organization_id)')
    .action(async (options: { port: number; domain: string; name: string; organization?: string }, command: Command) => {
      if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65_535)
        throw new UsageError('--port must be a port number');
      const { baseUrl, applicationId, secretKey } = resolveCredentials(globalOptions(command), await readConfig());
      // Whoever picks a person on its page is signed in as them: never for a production application.
      if (secretKey?.startsWith('sk_live_'))
        throw new UsageError('saml test-idp is for development applications only (an sk_test_ key)');
      const gatehouse = await secretKeyClient(command);
      // Loaded only for this command: samlify and the certificate library stay out of every other command's start-up.
      const { startTestIdp } = await import('../saml/test-idp.ts');
      const idp = await startTestIdp({ port: options.port, domain: options.domain });
      let connection: SamlConnection;
      try {
        const existing = (await gatehouse.saml.connections.list()).find((c) => c.name === options.name);
        const organization = options.organization !== undefined ? { organization_id: options.organization } : {};
        connection = existing
          ? await gatehouse.saml.connections.update({
              id: existing.id,
              name: existing.name,
              idp_entity_id: idp.entityId,
              idp_sso_url: idp.ssoUrl,
              idp_certificate: idp.certificate,
              email_domain: options.domain,
              enabled: true,
              ...organization,
            })
          : await gatehouse.saml.connections.createFromMetadata({
              metadata_xml: idp.metadataXml,
              name: options.name,
              email_domain: options.domain,
              ...organization,
            });
      } catch (error) {
        await idp.close();
        const code = (error as { code?: string }).code;
        if (code === 'invalid_url') {
          throw new UsageError(
            'the server refuses an http://localhost IdP: start it with GATEHOUSE_ALLOW_INSECURE_SAML=1 (development only)',
          );
        }
        throw error;
      }
      idp.trust({ entityId: connection.metadata_url, acsUrl: connection.acs_url });
      if (globalOptions(command).json) {
        process.stdout.write(
          `${JSON.stringify({ idp: { url: idp.url, entity_id: idp.entityId, sso_url: idp.ssoUrl, people: idp.people }, connection })}\n`,
        );
      } else {
        process.stdout.write(
          [
            `Test IdP running at ${idp.url} (metadata: ${idp.entityId})`,
            `Connection ${connection.id} (“${connection.name}”, email domain ${options.domain}) now points at it.`,
            '',
            'People to sign in as (no password: pick one on the IdP’s page):',
            ...idp.people.map((p) => `  ${p.email}  ${p.firstName} ${p.lastName}  [${p.groups.join(', ')}]`),
            '',
            'Try it:',
            `  hosted sign-in:  ${baseUrl}/a/${applicationId ?? '<application id>'}/sign-in  → enter ${idp.people[0]?.email}`,
            `  API:             POST ${baseUrl}/v1/auth/sso/start {"email": "${idp.people[0]?.email}", "redirect_uri": "<your callback>"}`,
            '  admin portal:    gatehouse portal link <organization id> --intent sso, then “Test the connection”',
            '',
            'For development only. Press Ctrl-C to stop.',
            '',
          ].join('\n'),
        );
      }
      await new Promise<void>((resolve) => {
        const stop = () => resolve();
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
      await idp.close();
    });
}
