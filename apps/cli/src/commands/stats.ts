import type { Command } from 'commander';
import { applicationClient } from '../context.ts';
import { present } from '../output.ts';
import { recordView } from '../ui/view.ts';

export function registerStats(program: Command): void {
  program
    .command('stats')
    .description('Usage statistics of the application you are logged in to')
    .action(async (_options, command: Command) => {
      const { gatehouse, applicationId } = await applicationClient(command);
      await present(
        command,
        'Fetching the statistics',
        () => gatehouse.stats.get({ id: applicationId }),
        (stats) => recordView(stats),
      );
    });
}
