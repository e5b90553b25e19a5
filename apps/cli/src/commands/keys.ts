import type { Command } from 'commander';
import { applicationClient } from '../context.ts';
import { present } from '../output.ts';
import { recordView } from '../ui/view.ts';

export function registerKeys(program: Command): void {
  const keys = program.command('keys').description("Manage the application's access-token signing keys");

  keys
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
