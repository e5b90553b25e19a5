import { defineModule } from '../../lib/modules.ts';
import { auditLogsRouter } from './audit-logs.router.ts';

/**
 * The audit log: the event log read as who did what (each event is written with its actor, origin, organization and
 * target: `events/audit-mapping.ts`). It owns no table; its retention is the events' purge (`events.service.ts`).
 */
export const auditLogsModule = defineModule({
  name: 'audit-logs',
  procedures: { auditLogs: auditLogsRouter },
  tag: {
    name: 'Audit logs',
    description: 'Who did what, when and from where: every change, with its actor, organization and target.',
  },
});
