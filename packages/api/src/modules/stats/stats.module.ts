import { defineModule } from '../../lib/modules.ts';
import { statsRouter } from './stats.router.ts';

/** An application's headline statistics. */
export const statsModule = defineModule({
  name: 'stats',
  procedures: { stats: statsRouter },
});
