import { type Command, InvalidArgumentError } from 'commander';
import { secretKeyClient } from '../context.ts';
import { present } from '../output.ts';
import { recordView } from '../ui/view.ts';

const INTENTS = ['sso', 'directory', 'domains', 'audit_log'] as const;
type Intent = (typeof INTENTS)[number];

/** `gatehouse portal link ORG --intent sso`: a one-time admin portal link for an organization's IT administrator. */
export function registerPortal(program: Command): void {
  const portal = program
    .command('portal')
    .description("Links to the admin portal, where a customer's IT administrator sets up SSO");
  portal
    .command('link')
    .description('Create an admin portal link for an organization (opens once within 5 minutes; the session lasts an hour)')
    .argument('<organization>', 'organization id')
    .requiredOption('--intent <intent>', `what the link opens: ${INTENTS.join(', ')}`, (value: string): Intent => {
      const intent = INTENTS.find((i) => i === value);
      if (!intent) throw new InvalidArgumentError(`one of ${INTENTS.join(', ')}`);
      return intent;
    })
    .option('--return-url <url>', "where the portal's Done button returns (on one of the application's allowed origins)")
    .action(async (organization: string, options: { intent: Intent; returnUrl?: string }, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Creating the portal link',
        () =>
          gatehouse.organizations.portalLinks.create({
            id: organization,
            intent: options.intent,
            ...(options.returnUrl !== undefined ? { return_url: options.returnUrl } : {}),
          }),
        (link) => recordView(link, 'Send the IT administrator\u2019s browser to the URL now: it opens once, within 5 minutes.'),
      );
    });
}
