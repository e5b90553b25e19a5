import { deleteInBatches, housekeepingTasks, type PurgeStep, purgeSteps } from '../../lib/housekeeping.ts';
import { defineModule } from '../../lib/modules.ts';
import { statsRouter } from './stats.router.ts';
import { rollUpStatsDays } from './stats-daily.service.ts';
import { StatsDayEntity } from './stats-day.entity.ts';

/** A rolled-up day goes once no range can ask for it (366 days, today included). */
const purgeStatsDays: PurgeStep = (em) => deleteInBatches(em, 'stats_days', "t.day < (now() at time zone 'UTC')::date - 366");

/**
 * An application's statistics: the headline numbers and the console dashboard's daily series, whose finished days
 * housekeeping rolls up.
 */
export const statsModule = defineModule({
  name: 'stats',
  entities: [StatsDayEntity],
  procedures: { stats: statsRouter },
  hooks: [housekeepingTasks.entry('stats_days', rollUpStatsDays), purgeSteps.entry('stats_days', purgeStatsDays)],
});
