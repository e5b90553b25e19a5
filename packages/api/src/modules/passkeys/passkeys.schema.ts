import { z } from 'zod';
import { FreeFormJsonSchema } from '../../lib/schemas.ts';
import { HostIdSchema, PendingTokenInputSchema } from '../sign-in/sign-in.schema.ts';

/** CONTRACT §5: a passkey as its owner sees it (never its key material). */
export const PasskeySchema = z
  .object({
    id: z.uuid(),
    name: z.string(),
    aaguid: z.string().meta({ description: 'The authenticator model (all zeros when it does not say)' }),
    transports: z.array(z.string()),
    backed_up: z.boolean().meta({ description: 'Synced to other devices (a multi-device passkey)' }),
    created_at: z.iso.datetime(),
    last_used_at: z.iso.datetime().nullable(),
  })
  .meta({ id: 'Passkey' });
export type PasskeyRecord = z.infer<typeof PasskeySchema>;

const StateSchema = z.string().min(1).max(200).meta({ description: 'The `state` that the start of this ceremony returned' });

/**
 * The browser's PublicKeyCredential as JSON (`toJSON()`, or what @simplewebauthn/browser returns), binary fields
 * base64url. Its inner structure is checked by the WebAuthn verification itself; here only its size and outline.
 */
const CredentialSchema = z
  .looseObject({
    id: z.string().min(1).max(1400),
    rawId: z.string().min(1).max(1400),
    type: z.literal('public-key'),
    response: z.looseObject({ clientDataJSON: z.string().min(1).max(8192) }),
    clientExtensionResults: FreeFormJsonSchema.optional().default({}),
    authenticatorAttachment: z.string().max(32).nullable().optional(),
  })
  .meta({ description: 'The public-key credential JSON produced by the browser (base64url fields)' });

const RegistrationCredentialSchema = CredentialSchema.extend({
  response: z.looseObject({
    clientDataJSON: z.string().min(1).max(8192),
    attestationObject: z.string().min(1).max(65536),
    transports: z.array(z.string().max(32)).max(16).optional(),
  }),
});

const AssertionCredentialSchema = CredentialSchema.extend({
  response: z.looseObject({
    clientDataJSON: z.string().min(1).max(8192),
    authenticatorData: z.string().min(1).max(8192),
    // Post-quantum signatures are large: ML-DSA-87's is 4627 bytes (6170 base64url characters).
    signature: z.string().min(1).max(8192),
    userHandle: z.string().max(128).nullable().optional(),
  }),
});

const CredentialDescriptorSchema = z.object({
  id: z.string(),
  type: z.string(),
  transports: z.array(z.string()).optional(),
});

/** What `navigator.credentials.create()` needs, as JSON (PublicKeyCredentialCreationOptionsJSON). */
export const RegistrationOptionsSchema = z
  .object({
    rp: z.object({ id: z.string().optional(), name: z.string() }),
    user: z.object({ id: z.string(), name: z.string(), displayName: z.string() }),
    challenge: z.string(),
    pubKeyCredParams: z.array(z.object({ alg: z.number(), type: z.string() })),
    timeout: z.number().optional(),
    excludeCredentials: z.array(CredentialDescriptorSchema).optional(),
    authenticatorSelection: z
      .object({
        authenticatorAttachment: z.string().optional(),
        requireResidentKey: z.boolean().optional(),
        residentKey: z.string().optional(),
        userVerification: z.string().optional(),
      })
      .optional(),
    hints: z.array(z.string()).optional(),
    attestation: z.string().optional(),
    attestationFormats: z.array(z.string()).optional(),
    extensions: z.object({ credProps: z.boolean().optional() }).optional(),
  })
  .meta({ id: 'PasskeyRegistrationOptions' });

/** What `navigator.credentials.get()` needs, as JSON (PublicKeyCredentialRequestOptionsJSON). */
export const AuthenticationOptionsSchema = z
  .object({
    challenge: z.string(),
    timeout: z.number().optional(),
    rpId: z.string().optional(),
    allowCredentials: z.array(CredentialDescriptorSchema).optional(),
    userVerification: z.string().optional(),
    hints: z.array(z.string()).optional(),
  })
  .meta({ id: 'PasskeyAuthenticationOptions' });

const STATE_DESCRIPTION = 'Opaque; send it back with the credential within 5 minutes, once';
export const RegistrationCeremonySchema = z
  .object({ options: RegistrationOptionsSchema, state: z.string().meta({ description: STATE_DESCRIPTION }) })
  .meta({ id: 'PasskeyRegistrationCeremony' });
export const AuthenticationCeremonySchema = z
  .object({ options: AuthenticationOptionsSchema, state: z.string().meta({ description: STATE_DESCRIPTION }) })
  .meta({ id: 'PasskeyAuthenticationCeremony' });

export const FinishRegistrationInputSchema = z.strictObject({
  credential: RegistrationCredentialSchema,
  state: StateSchema,
  name: z.string().trim().min(1).max(200).optional().meta({ description: 'A label, e.g. "MacBook Touch ID"' }),
});

export const FinishAssertionInputSchema = z.strictObject({ credential: AssertionCredentialSchema, state: StateSchema });

export const StartPasskeyMfaInputSchema = z.strictObject({ pending_token: PendingTokenInputSchema });

export type RegistrationCredential = z.infer<typeof RegistrationCredentialSchema>;
export type AssertionCredential = z.infer<typeof AssertionCredentialSchema>;

/** A passkey sign-in's start: optionally the host the person signs in to (no body at all is fine). */
export const StartPasskeySignInInputSchema = z.strictObject({ host_id: HostIdSchema.optional() }).optional();

/** The `data` of `passkey.counter_regression` (a cloned authenticator; the sign-in was refused). */
export const CounterRegressionEventSchema = z.object({
  passkey_id: z.uuid(),
  user_id: z.uuid(),
  stored_counter: z.number().int(),
  reported_counter: z.number().int(),
});
