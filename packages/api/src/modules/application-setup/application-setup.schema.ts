import { z } from 'zod';
import { ApiKeyWithSecretSchema } from '../api-keys/api-keys.schema.ts';
import { ApplicationSchema } from '../applications/applications.schema.ts';

export const CreatedApplicationSchema = z
  .object({ application: ApplicationSchema, secret_key: ApiKeyWithSecretSchema })
  .meta({ id: 'CreatedApplication' });
