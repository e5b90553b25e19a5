import { defineEntity, p } from '@mikro-orm/core';
import { SessionEntity } from './session.entity.ts';

/** Every refresh token ever issued, by hash: presenting one that is not the session's current token is reuse. */
export const RefreshTokenEntity = defineEntity({
  name: 'RefreshToken',
  tableName: 'refresh_tokens',
  properties: {
    tokenHash: p.string().length(64).primary(),
    session: () => p.manyToOne(SessionEntity).mapToPk().deleteRule('cascade'),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
  indexes: [{ properties: ['session'] }],
});
