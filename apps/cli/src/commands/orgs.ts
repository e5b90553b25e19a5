import type { Organization, OrganizationInvitation, OrganizationMember } from '@gatehouse/sdk';
import { type Command, InvalidArgumentError } from 'commander';
import { pageInput, pageOptions } from '../args.ts';
import { confirm, mustConfirm } from '../confirm.ts';
import { secretKeyClient } from '../context.ts';
import { UsageError } from '../errors.ts';
import { present } from '../output.ts';
import { type Column, pageSummary, recordView, tableView } from '../ui/view.ts';
import { registerDirectories } from './directories.ts';
import { registerOrgDomains } from './org-domains.ts';

const orgColumns: Column<Organization>[] = [
  { key: 'id', header: 'ID', value: (o) => o.id },
  { key: 'name', header: 'NAME', value: (o) => o.name },
  { key: 'slug', header: 'SLUG', value: (o) => o.slug },
  { key: 'member_count', header: 'MEMBERS', value: (o) => o.member_count },
  { key: 'created_at', header: 'CREATED', value: (o) => o.created_at },
];

const memberColumns: Column<OrganizationMember>[] = [
  { key: 'user_id', header: 'USER ID', value: (m) => m.user_id },
  { key: 'email', header: 'EMAIL', value: (m) => m.email },
  { key: 'role', header: 'ROLE', value: (m) => m.role },
  { key: 'user_status', header: 'STATUS', value: (m) => m.user_status },
  { key: 'created_at', header: 'SINCE', value: (m) => m.created_at },
];

const invitationColumns: Column<OrganizationInvitation>[] = [
  { key: 'id', header: 'ID', value: (i) => i.id },
  { key: 'email', header: 'EMAIL', value: (i) => i.email },
  { key: 'role', header: 'ROLE', value: (i) => i.role },
  { key: 'status', header: 'STATUS', value: (i) => i.status },
  { key: 'expires_at', header: 'EXPIRES', value: (i) => i.expires_at },
  { key: 'created_at', header: 'CREATED', value: (i) => i.created_at },
];

const INVITATION_STATUSES = ['pending', 'accepted', 'revoked', 'expired'] as const;
const DURATION_UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };

/** `--expires-in 7d`: seconds, or a number with s, m, h or d (the server checks the range: 300 s to 30 days). */
export function parseDuration(value: string): number {
  const match = /^(\d+)\s*([smhd]?)$/i.exec(value.trim());
  if (!match) throw new InvalidArgumentError('expected seconds, or a number with s, m, h or d (e.g. 7d).');
  return Number(match[1]) * (DURATION_UNITS[(match[2] || 's').toLowerCase()] ?? 1);
}

function parseInvitationStatus(value: string): (typeof INVITATION_STATUSES)[number] {
  const status = INVITATION_STATUSES.find((s) => s === value.trim().toLowerCase());
  if (!status) throw new InvalidArgumentError(`expected one of ${INVITATION_STATUSES.join(', ')}.`);
  return status;
}

export function registerOrgs(program: Command): void {
  const orgs = program.command('orgs').description("Manage the application's organizations and their members");

  orgs
    .command('create')
    .description('Create an organization')
    .argument('<name>', 'organization name')
    .option('--slug <slug>', 'URL-friendly unique key (generated from the name when absent)')
    .action(async (name: string, options: { slug?: string }, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Creating the organization',
        () => gatehouse.organizations.create({ name, ...(options.slug !== undefined ? { slug: options.slug } : {}) }),
        (org) => recordView(org),
      );
    });

  pageOptions(
    orgs
      .command('list')
      .description('List organizations, newest first')
      .option('--search <text>', 'only organizations whose name or slug contains this text'),
  ).action(async (options: { search?: string; limit?: number; offset?: number }, command: Command) => {
    const gatehouse = await secretKeyClient(command);
    await present(
      command,
      'Listing organizations',
      () =>
        gatehouse.organizations.list({
          ...(options.search !== undefined ? { search: options.search } : {}),
          ...pageInput(options),
        }),
      (page) => tableView(orgColumns, page.organizations, 'No organizations.', pageSummary(page, page.organizations.length)),
    );
  });

  orgs
    .command('get')
    .description('Show an organization')
    .argument('<id>', 'organization id')
    .action(async (id: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Fetching the organization',
        () => gatehouse.organizations.get({ id }),
        (org) => recordView(org),
      );
    });

  orgs
    .command('update')
    .description('Rename an organization or change its slug')
    .argument('<id>', 'organization id')
    .option('--name <name>', 'new name')
    .option('--slug <slug>', 'new slug (unique in the application)')
    .action(async (id: string, options: { name?: string; slug?: string }, command: Command) => {
      if (options.name === undefined && options.slug === undefined)
        throw new UsageError('nothing to change: pass --name and/or --slug');
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Updating the organization',
        () => gatehouse.organizations.update({ id, ...options }),
        (org) => recordView(org),
      );
    });

  orgs
    .command('delete')
    .description('Delete an organization and its memberships; there is no undo')
    .argument('<id>', 'organization id')
    .option('-y, --yes', 'do not ask for confirmation (required when standard input is not a terminal)')
    .action(async (id: string, options: { yes?: boolean }, command: Command) => {
      const ask = mustConfirm(options.yes, 'deleting an organization removes all its memberships');
      const gatehouse = await secretKeyClient(command);
      if (ask) {
        const { name } = await gatehouse.organizations.get({ id });
        if (!(await confirm(`Delete organization "${name}" (${id}) and its memberships? There is no undo.`))) {
          throw new Error('cancelled: nothing was deleted');
        }
      }
      await present(
        command,
        'Deleting the organization',
        () => gatehouse.organizations.delete({ id }),
        (deleted) => ({ kind: 'message', text: `Deleted organization ${deleted.id}` }),
      );
    });

  registerOrgDomains(orgs);
  registerDirectories(orgs);

  const members = orgs.command('members').description("Manage an organization's members");

  members
    .command('role')
    .description("Change a member's role")
    .argument('<org>', 'organization id')
    .argument('<user>', 'user id')
    .argument('<role>', 'owner, admin, member or an application-defined role key')
    .action(async (org: string, user: string, role: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Changing the role',
        () => gatehouse.organizations.members.update({ id: org, user_id: user, role }),
        (member) => recordView(member),
      );
    });

  members
    .command('remove')
    .description('Remove a user from an organization')
    .argument('<org>', 'organization id')
    .argument('<user>', 'user id')
    .option('-y, --yes', 'do not ask for confirmation (required when standard input is not a terminal)')
    .action(async (org: string, user: string, options: { yes?: boolean }, command: Command) => {
      const ask = mustConfirm(options.yes, 'removing a member takes their access to the organization');
      if (ask && !(await confirm(`Remove user ${user} from organization ${org}?`)))
        throw new Error('cancelled: nothing was removed');
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Removing the member',
        () => gatehouse.organizations.members.remove({ id: org, user_id: user }),
        () => ({ kind: 'message', text: `Removed user ${user} from organization ${org}` }),
      );
    });

  members
    .command('add')
    .description('Add a user to an organization')
    .argument('<org>', 'organization id')
    .argument('<user>', 'user id')
    .option('--role <role>', 'owner, admin, member (default) or an application-defined role key')
    .action(async (org: string, user: string, options: { role?: string }, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Adding the member',
        () => gatehouse.organizations.members.add({ id: org, user_id: user, ...(options.role ? { role: options.role } : {}) }),
        (member) => recordView(member),
      );
    });

  pageOptions(
    members.command('list').description("List an organization's members, newest first").argument('<org>', 'organization id'),
  ).action(async (org: string, options: { limit?: number; offset?: number }, command: Command) => {
    const gatehouse = await secretKeyClient(command);
    await present(
      command,
      'Listing members',
      () => gatehouse.organizations.members.list({ id: org, ...pageInput(options) }),
      (page) => tableView(memberColumns, page.members, 'No members.', pageSummary(page, page.members.length)),
    );
  });

  orgs
    .command('invite')
    .description('Invite an email address to an organization (the invitation link is mailed to it)')
    .argument('<org>', 'organization id')
    .argument('<email>', 'the address to invite')
    .option('--role <role>', 'owner, admin, member (default) or an application-defined role key')
    .option('--redirect-url <url>', 'where the invitation page sends the person once accepted (an allowed origin)')
    .option(
      '--expires-in <duration>',
      'lifetime of the link: seconds, or e.g. 30m, 48h, 7d (default 7d, 300 s to 30 days)',
      parseDuration,
    )
    .action(
      async (
        org: string,
        email: string,
        options: { role?: string; redirectUrl?: string; expiresIn?: number },
        command: Command,
      ) => {
        const gatehouse = await secretKeyClient(command);
        await present(
          command,
          'Inviting',
          () =>
            gatehouse.organizations.invitations.create({
              id: org,
              email,
              ...(options.role !== undefined ? { role: options.role } : {}),
              ...(options.redirectUrl !== undefined ? { redirect_url: options.redirectUrl } : {}),
              ...(options.expiresIn !== undefined ? { expires_in_s: options.expiresIn } : {}),
            }),
          (invitation) => recordView(invitation),
        );
      },
    );

  const invitations = pageOptions(
    orgs
      .command('invitations')
      .description("List an organization's invitations, newest first (or revoke or resend one)")
      .argument('[org]', 'organization id')
      .option('--status <status>', `only invitations with this status: ${INVITATION_STATUSES.join(', ')}`, parseInvitationStatus),
  ).action(
    async (
      org: string | undefined,
      options: { status?: OrganizationInvitation['status']; limit?: number; offset?: number },
      command: Command,
    ) => {
      if (!org) throw new UsageError('missing the organization id: gatehouse orgs invitations <org>');
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Listing invitations',
        () =>
          gatehouse.organizations.invitations.list({
            id: org,
            ...(options.status !== undefined ? { status: options.status } : {}),
            ...pageInput(options),
          }),
        (page) => tableView(invitationColumns, page.invitations, 'No invitations.', pageSummary(page, page.invitations.length)),
      );
    },
  );

  invitations
    .command('revoke')
    .description('Revoke an invitation: its link stops working at once')
    .argument('<org>', 'organization id')
    .argument('<invitation>', 'invitation id')
    .action(async (org: string, invitation: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Revoking the invitation',
        () => gatehouse.organizations.invitations.revoke({ id: org, invitation_id: invitation }),
        (revoked) => recordView(revoked),
      );
    });

  invitations
    .command('resend')
    .description('Mail a new invitation link (the previous link stops working)')
    .argument('<org>', 'organization id')
    .argument('<invitation>', 'invitation id')
    .action(async (org: string, invitation: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Resending the invitation',
        () => gatehouse.organizations.invitations.resend({ id: org, invitation_id: invitation }),
        (resent) => recordView(resent),
      );
    });
}
