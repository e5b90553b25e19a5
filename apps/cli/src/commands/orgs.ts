import type { Organization, OrganizationMember } from '@gatehouse/sdk';
import type { Command } from 'commander';
import { pageInput, parseInteger } from '../args.ts';
import { secretKeyClient } from '../context.ts';
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

const pageOptions = (command: Command): Command =>
  command
    .option('--limit <n>', 'page size (1-100, default 25)', parseInteger)
    .option('--offset <n>', 'rows to skip', parseInteger);

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

  const members = orgs.command('members').description("Manage an organization's members");

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
