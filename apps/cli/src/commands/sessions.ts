import type { Command } from 'commander';
import { secretKeyClient } from '../context.ts';
import { present } from '../output.ts';
import { type Column, tableView } from '../ui/view.ts';

interface SessionRow {
  id: string;
  aal: number;
  user_agent: string | null;
  ip: string | null;
  created_at: string;
  last_active_at: string;
}

const columns: Column<SessionRow>[] = [
  { key: 'id', header: 'ID', value: (s) => s.id },
  { key: 'aal', header: 'AAL', value: (s) => String(s.aal) },
  { key: 'ip', header: 'IP', value: (s) => s.ip },
  { key: 'user_agent', header: 'BROWSER', value: (s) => s.user_agent },
  { key: 'created_at', header: 'SIGNED IN', value: (s) => s.created_at },
  { key: 'last_active_at', header: 'LAST ACTIVE', value: (s) => s.last_active_at },
];

export function registerSessions(program: Command): void {
  const sessions = program.command('sessions').description("Manage users' sessions");

  sessions
    .command('list')
    .description("List a user's live sessions, newest first")
    .argument('<user-id>', 'user id')
    .action(async (userId: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        "Fetching the user's sessions",
        () => gatehouse.users.sessions.list({ id: userId }),
        (list) => tableView(columns, list, 'No live sessions.'),
      );
    });

  sessions
    .command('revoke')
    .description('Sign a user out everywhere, or of one session: revoke every live session of the user, or the one named')
    .argument('<user-id>', 'user id')
    .argument('[session-id]', 'one session, from `gatehouse sessions list <user-id>` (default: every session)')
    .addHelpText(
      'after',
      "\nRefresh tokens stop working at once, and the service refuses the sessions' access tokens at once. A backend that\n" +
        'only verifies access tokens locally (verifyToken) accepts them until they expire (10 minutes by default).',
    )
    .action(async (userId: string, sessionId: string | undefined, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      if (sessionId) {
        await present(
          command,
          'Revoking the session',
          () => gatehouse.users.sessions.revoke({ id: userId, session_id: sessionId }),
          () => ({ kind: 'message', text: `Revoked session ${sessionId} of user ${userId}` }),
        );
        return;
      }
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
