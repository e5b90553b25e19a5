import { z } from 'zod';
import { FreeFormJsonSchema, storableJson, text } from '../../lib/schemas.ts';
import { HostIdSchema, PendingTokenInputSchema } from '../sign-in/sign-in.schema.ts';

/** CONTRACT §5: a passkey as its owner sees it (never its key material). */
export const PasskeySchema = z
  .object({
    id: z.uuid(),
    name: text(),
    aaguid: text().meta({ description: 'The authenticator model (all zeros when it does not say)' }),
    transports: z.array(text()),
    backed_up: z.boolean().meta({ description: 'Synced to other devices (a multi-device passkey)' }),
    created_at: z.iso.datetime(),
    last_used_at: z.iso.datetime().nullable(),
  })
  .meta({ id: 'Passkey' });
export type PasskeyRecord = z.infer<typeof PasskeySchema>;

const StateSchema = text().min(1).max(200).meta({ description: 'The `state` that the start of this ceremony returned' });

/**
 * The browser's PublicKeyCredential as JSON (`toJSON()`, or what @simplewebauthn/browser returns), binary fields
 * base64url. Its inner structure is checked by the WebAuthn verification itself; here only its size and outline, and
 * (`storableJson`, where it is used: an extended schema cannot carry a check) the members it passes through.
 */
const CredentialSchema = z
  .looseObject({
    id: text().min(1).max(1400),
    rawId: text().min(1).max(1400),
    type: z.literal('public-key'),
    response: z.looseObject({ clientDataJSON: text().min(1).max(8192) }),
    clientExtensionResults: FreeFormJsonSchema.optional().default({}),
    authenticatorAttachment: text().max(32).nullable().optional(),
  })
  .meta({ description: 'The public-key credential JSON produced by the browser (base64url fields)' });

const RegistrationCredentialSchema = CredentialSchema.extend({
  response: z.looseObject({
    clientDataJSON: text().min(1).max(8192),
    attestationObject: text().min(1).max(65536),
    transports: z.array(text().max(32)).max(16).optional(),
  }),
});

const AssertionCredentialSchema = CredentialSchema.extend({
  response: z.looseObject({
    clientDataJSON: text().min(1).max(8192),
    authenticatorData: text().min(1).max(8192),
    // Post-quantum signatures are large: ML-DSA-87's is 4627 bytes (6170 base64url characters).
    signature: text().min(1).max(8192),
    userHandle: text().max(128).nullable().optional(),
  }),
});

const CredentialDescriptorSchema = z.object({
  id: text(),
  type: text(),
  transports: z.array(text()).optional(),
});

/** What `navigator.credentials.create()` needs, as JSON (PublicKeyCredentialCreationOptionsJSON). */
export const RegistrationOptionsSchema = z
  .object({
    rp: z.object({ id: text().optional(), name: text() }),
    user: z.object({ id: text(), name: text(), displayName: text() }),
    challenge: text(),
    pubKeyCredParams: z.array(z.object({ alg: z.number(), type: text() })),
    timeout: z.number().optional(),
    excludeCredentials: z.array(CredentialDescriptorSchema).optional(),
    authenticatorSelection: z
      .object({
        authenticatorAttachment: text().optional(),
        requireResidentKey: z.boolean().optional(),
        residentKey: text().optional(),
        userVerification: text().optional(),
      })
      .optional(),
    hints: z.array(text()).optional(),
    attestation: text().optional(),
    attestationFormats: z.array(text()).optional(),
    extensions: z.object({ credProps: z.boolean().optional() }).optional(),
  })
  .meta({ id: 'PasskeyRegistrationOptions' });

/** What `navigator.credentials.get()` needs, as JSON (PublicKeyCredentialRequestOptionsJSON). */
export const AuthenticationOptionsSchema = z
  .object({
    challenge: text(),
    timeout: z.number().optional(),
    rpId: text().optional(),
    allowCredentials: z.array(CredentialDescriptorSchema).optional(),
    userVerification: text().optional(),
    hints: z.array(text()).optional(),
  })
  .meta({ id: 'PasskeyAuthenticationOptions' });

const STATE_DESCRIPTION = 'Opaque; send it back with the credential within 5 minutes, once';
export const RegistrationCeremonySchema = z
  .object({ options: RegistrationOptionsSchema, state: text().meta({ description: STATE_DESCRIPTION }) })
  .meta({ id: 'PasskeyRegistrationCeremony' });
export const AuthenticationCeremonySchema = z
  .object({ options: AuthenticationOptionsSchema, state: text().meta({ description: STATE_DESCRIPTION }) })
  .meta({ id: 'PasskeyAuthenticationCeremony' });

export const FinishRegistrationInputSchema = z.strictObject({
  credential: RegistrationCredentialSchema.check(storableJson),
  state: StateSchema,
  name: text().trim().min(1).max(200).optional().meta({ description: 'A label, e.g. "MacBook Touch ID"' }),
});

export const FinishAssertionInputSchema = z.strictObject({
  credential: AssertionCredentialSchema.check(storableJson),
  state: StateSchema,
});

export const StartPasskeyMfaInputSchema = z.strictObject({ pending_token: PendingTokenInputSchema });

export type RegistrationCredential = z.infer<typeof RegistrationCredentialSchema>;
export type AssertionCredential = z.infer<typeof AssertionCredentialSchema>;

/** A passkey sign-in's start: optionally the host the person signs in to (no body at all is fine). */
export const StartPasskeySignInInputSchema = z.strictObject({ host_id: HostIdSchema.optional() }).optional();

/** The `data` of `passkey.counter_regression` (a cloned authenticator; the sign-in was refused). */
export const CounterRegressionEventSchema = z.object({
  passkey_id: z.uuid(),
  user_id: z.uuid(),
  /** The identities table's column (null only for identities that are not passkeys). */
  stored_counter: z.number().int().nullable(),
  reported_counter: z.number().int(),
});
