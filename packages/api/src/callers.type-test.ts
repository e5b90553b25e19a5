/**
 * Compile-time proof that "who may call this" is checked by the compiler: each procedure builder hands its handler
 * the context of its caller, and a service that needs a stronger caller does not accept a weaker one. `npm run
 * typecheck` checks this file (each `@ts-expect-error` must stay an error); nothing imports or runs it.
 */
import { z } from 'zod';
import { createApiKey, listApiKeys, secretKeyProcedure } from './modules/api-keys/api-keys.service.ts';
import { listApplications } from './modules/applications/applications.service.ts';
import { endUserProcedure, operatorProcedure } from './modules/applications/callers.ts';
import { listPasskeys } from './modules/passkeys/passkeys.service.ts';
import { signedInProcedure } from './modules/sessions/signed-in.ts';
import { publicProcedure, router } from './trpc.ts';

const input = z.strictObject({});

export const proofs = router({
  endUser: endUserProcedure.input(input).query(async ({ ctx }) => {
    // @ts-expect-error an end user's browser is not signed in: a signed-in service refuses its context
    await listPasskeys(ctx);
    // @ts-expect-error nor does it hold a secret key
    await createApiKey(ctx, { name: 'k', scopes: [] });
    // @ts-expect-error nor the operator token
    await listApplications(ctx, { limit: 1, offset: 0 });
    // What only needs the tenant (`TenantContext`) takes it: the builder decides who may call.
    return listApiKeys(ctx);
  }),
  signedIn: signedInProcedure.input(input).query(async ({ ctx }) => {
    // @ts-expect-error a signed-in end user holds no secret key
    await createApiKey(ctx, { name: 'k', scopes: [] });
    return listPasskeys(ctx);
  }),
  secretKey: secretKeyProcedure('api_keys:write')
    .input(input)
    .query(async ({ ctx }) => {
      // @ts-expect-error a secret key is no signed-in end user
      await listPasskeys(ctx);
      return createApiKey(ctx, { name: 'k', scopes: [] });
    }),
  operator: operatorProcedure.input(input).query(async ({ ctx }) => {
    // @ts-expect-error the operator has no application of its own
    await listApiKeys(ctx);
    return listApplications(ctx, { limit: 1, offset: 0 });
  }),
  public: publicProcedure.input(input).query(async ({ ctx }) => {
    // @ts-expect-error an anonymous caller has no application
    await listApiKeys(ctx);
  }),
});
