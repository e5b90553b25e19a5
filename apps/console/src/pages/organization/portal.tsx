import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { Button, Form, Input, Label, Radio, RadioGroup, Text, TextField } from 'react-aria-components';
import { app, type Inputs } from '../../api.ts';
import { CopyButton } from '../../components/copy-button.tsx';
import { Snippet } from '../../components/empty-state.tsx';
import { ErrorNotice } from '../../components/error-notice.tsx';

type Intent = Inputs['organizations']['portalLinks']['create']['intent'];

const INTENTS: Array<{ id: Intent; name: string }> = [
  { id: 'sso', name: 'SSO: set up and test the SAML connection' },
  { id: 'directory', name: 'Directory: SCIM provisioning' },
  { id: 'domains', name: "Domains: verify the organization's domains and set their policies" },
  { id: 'audit_log', name: "Audit log: read the organization's audit log" },
];

/**
 * A link to the admin portal for the organization's IT administrator, for one part of it (the intent): shown once,
 * with a copy button; it opens once within 5 minutes.
 */
export function PortalLinks({ orgId }: { orgId: string }) {
  const trpc = app.useTRPC();
  const [intent, setIntent] = useState<Intent>('sso');
  const [returnUrl, setReturnUrl] = useState('');
  const create = useMutation(trpc.organizations.portalLinks.create.mutationOptions());
  return (
    <div>
      <h2>Admin portal</h2>
      <p>
        The admin portal lets the organization's IT administrator set up SSO, SCIM or the domains themselves, for this
        organization only. A link opens once, within 5 minutes: make one when they are ready, and do not mail it (a mail scanner
        that follows it would use it up).
      </p>
      <section className="panel" aria-labelledby="create-portal-link">
        <h3 id="create-portal-link">Create a link</h3>
        <Form
          onSubmit={(event) => {
            event.preventDefault();
            const back = returnUrl.trim();
            create.mutate({ id: orgId, intent, ...(back ? { return_url: back } : {}) });
          }}
        >
          <RadioGroup
            className="field radios"
            isRequired
            value={intent}
            onChange={(value) => setIntent(INTENTS.find((i) => i.id === value)?.id ?? 'sso')}
          >
            <Label>What it opens</Label>
            {INTENTS.map((i) => (
              <Radio key={i.id} value={i.id}>
                {i.name}
              </Radio>
            ))}
          </RadioGroup>
          <TextField className="field" type="url" value={returnUrl} onChange={setReturnUrl} maxLength={2048}>
            <Label>Return address</Label>
            <Input placeholder="https://app.example.com/settings/sso" />
            <Text slot="description">Optional: where the portal's Done button goes; on one of the allowed origins.</Text>
          </TextField>
          <Button type="submit" className="button primary" isDisabled={create.isPending}>
            {create.isPending ? 'Creating…' : 'Create the link'}
          </Button>
        </Form>
        <ErrorNotice error={create.error} title="The link was not created" />
        {create.data && (
          <div className="notice success" role="status">
            <p className="notice-title">
              Link created. Copy it now: it is never shown again, and it opens once until{' '}
              {new Date(create.data.expires_at).toLocaleTimeString()}.
            </p>
            <p className="secret">
              <code>{create.data.url}</code> <CopyButton value={create.data.url} label="Copy the portal link" />
            </p>
          </div>
        )}
      </section>
      <Snippet label="With the CLI" code={`npx gatehouse portal link ${orgId} --intent ${intent}`} />
      <Snippet
        label="With curl"
        code={`curl -s -X POST "$GATEHOUSE/v1/organizations/${orgId}/portal-links" \\
  -H "authorization: Bearer $SECRET_KEY" -H "x-application-id: $APP" -H 'content-type: application/json' \\
  -d '{"intent": "${intent}"}'`}
      />
    </div>
  );
}
