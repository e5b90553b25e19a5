import { issueApiKey, toApiKeyRecord } from '../api-keys/api-keys.service.ts';
import type { ApplicationSettingsPatch } from '../applications/applications.schema.ts';
import { newApplication, toApplicationRecord } from '../applications/applications.service.ts';
import type { OperatorContext } from '../applications/contexts.ts';
import { createFirstSigningKey } from '../signing-keys/signing-keys.service.ts';

/**
 * An application is born with its first secret key (answered once) and its signing key, in one transaction. This
 * sits above applications, api-keys and signing-keys, so none of them imports another to bootstrap.
 */
export async function createApplication(
  ctx: OperatorContext,
  input: {
    name: string;
    environment: 'development' | 'production';
    allowed_origins: string[];
    settings: ApplicationSettingsPatch;
  },
) {
  return ctx.em.transactional(async (em) => {
    const app = newApplication(em, input);
    const { key, secret } = issueApiKey(em, app, 'Default key', ['*']);
    createFirstSigningKey(em, ctx.services, app.id);
    await em.flush();
    return { application: toApplicationRecord(app), secret_key: { ...toApiKeyRecord(key), secret } };
  });
}
