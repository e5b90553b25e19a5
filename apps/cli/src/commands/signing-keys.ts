import type { Command } from 'commander';
import { applicationClient } from '../context.ts';
import { present } from '../output.ts';
import { recordView } from '../ui/view.ts';

function addSigningKeyCommands(parent: Command): void {
  parent
    .command('rotate')
    .description('Sign new access tokens with a new key pair; the old public key stays published until its tokens expire')
    .action(async (_options, command: Command) => {
      const { gatehouse, applicationId } = await applicationClient(command);
      await present(
        command,
        'Rotating the signing key',
        () => gatehouse.signingKeys.rotate({ id: applicationId }),
        (rotated) =>
          recordView(
            { kid: rotated.kid, published: rotated.keys.map((key) => key.kid) },
            'Verifiers that cache the JWKS fetch the new key when they first see its kid.',
          ),
      );
    });
}

export function registerSigningKeys(program: Command): void {
  addSigningKeyCommands(
    program
      .command('signing-keys')
      .description("Manage the application's access-token signing keys (not API keys: see api-keys)"),
  );
  // `keys` was the name until signing keys and secret API keys (`api-keys`) were told apart; kept, hidden, for one
  // release so that scripts keep working while they are updated.
  const legacy = program.command('keys', { hidden: true }).description('Deprecated name of signing-keys');
  legacy.hook('preAction', () => {
    process.stderr.write('warning: `gatehouse keys` is deprecated and will be removed: use `gatehouse signing-keys`\n');
  });
  addSigningKeyCommands(legacy);
}
