import { purgeSteps } from '../../lib/housekeeping.ts';
import { defineModule } from '../../lib/modules.ts';
import { purgeMessages } from './mail-outbox.ts';
import { MessageEntity } from './message.entity.ts';
import { messagesRouter } from './messages.router.ts';

/** The mail outbox and the message log. */
export const messagesModule = defineModule({
  name: 'messages',
  entities: [MessageEntity],
  procedures: { messages: messagesRouter },
  hooks: [purgeSteps.entry('messages', purgeMessages)],
});
