import type { Command } from 'commander';
import { secretKeyClient } from '../context.ts';
import { present } from '../output.ts';

export function registerSessions(program: Command): void {
  const sessions = program.command('sessions').description("Manage users' sessions");

  sessions
    .command('revoke')
    .description('Sign a user out everywhere: revoke every live session of the user')
    .argument('<user-id>', 'user id')
    .addHelpText(
      'after',
      "\nRefresh tokens stop working at once, and the service refuses the sessions' access tokens at once. A backend that\n" +
        'only verifies access tokens locally (verifyToken) accepts them until they expire (10 minutes by default).',
    )
    .action(async (userId: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Revoking the sessions',
        () => gatehouse.users.revokeSessions({ id: userId }),
        (result) => ({
          kind: 'message',
          text: `Revoked ${result.revoked} session${result.revoked === 1 ? '' : 's'} of user ${result.user_id}`,
        }),
      );
    });
}
