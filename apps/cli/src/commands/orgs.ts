import type { Organization, OrganizationMember } from '@gatehouse/sdk';
import type { Command } from 'commander';
import { pageInput, pageOptions } from '../args.ts';
import { confirm, mustConfirm } from '../confirm.ts';
import { secretKeyClient } from '../context.ts';
import { UsageError } from '../errors.ts';
import { present } from '../output.ts';
import { type Column, pageSummary, recordView, tableView } from '../ui/view.ts';

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
}
