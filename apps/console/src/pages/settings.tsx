import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate, useParams } from '@tanstack/react-router';
import { useEffect, useState } from 'react';
import { Button, Checkbox, Form, Input, Label, Radio, RadioGroup, Text, TextArea, TextField } from 'react-aria-components';
import { app, forgetApplication, type Outputs, operator } from '../api.ts';
import { ErrorNotice } from '../components/error-notice.tsx';
import { refreshSession } from '../session.ts';

/** An application's settings: name, allowed origins, sign-in methods, MFA policy; and deleting it. */
export function SettingsPage() {
  const { appId } = useParams({ from: '/apps/$appId/settings' });
  const trpc = app.useTRPC();
  const application = useQuery(trpc.applications.get.queryOptions({ id: appId }));

  return (
    <section>
      <h1>Settings</h1>
      {application.isPending && <p role="status">Loading the settings…</p>}
      <ErrorNotice error={application.error} title="The settings could not be read" />
      {application.data && <SettingsForm application={application.data} />}
      {application.data && <DeleteApplication id={appId} name={application.data.name} />}
    </section>
  );
}

type Application = Outputs['applications']['get'];

function SettingsForm({ application }: { application: Application }) {
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const [name, setName] = useState(application.name);
  const [origins, setOrigins] = useState(application.allowed_origins.join('\n'));
  const [magicLink, setMagicLink] = useState(application.settings.sign_in.magic_link);
  const [passkeys, setPasskeys] = useState(application.settings.sign_in.passkeys);
  const [signUp, setSignUp] = useState(application.settings.sign_up);
  const [mfa, setMfa] = useState(application.settings.mfa);
  const update = useMutation(
    trpc.applications.update.mutationOptions({
      onSuccess: (saved) => {
        queryClient.setQueryData(trpc.applications.get.queryKey({ id: saved.id }), saved);
        void refreshSession();
      },
    }),
  );
  // A saved answer is the truth: the form shows what the server kept (trimmed names, normalised origins).
  useEffect(() => {
    setName(application.name);
    setOrigins(application.allowed_origins.join('\n'));
  }, [application]);

  return (
    <Form
      className="panel"
      aria-labelledby="general"
      onSubmit={(event) => {
        event.preventDefault();
        update.mutate({
          id: application.id,
          name,
          allowed_origins: origins
            .split(/[\s,]+/)
            .map((o) => o.trim())
            .filter(Boolean),
          settings: { sign_in: { magic_link: magicLink, passkeys }, sign_up: signUp, mfa },
        });
      }}
    >
      <h2 id="general">General</h2>
      <TextField className="field" isRequired value={name} onChange={setName} maxLength={200}>
        <Label>Name</Label>
        <Input />
      </TextField>
      <TextField className="field" value={origins} onChange={setOrigins}>
        <Label>Allowed origins</Label>
        <TextArea rows={3} />
        <Text slot="description">
          One per line, exactly as a browser sends it (https://app.example.com). Used for CORS and passkeys.
        </Text>
      </TextField>
      <fieldset className="field">
        <legend>Sign-in methods on the hosted page</legend>
        <Checkbox className="checkbox" isSelected={magicLink} onChange={setMagicLink}>
          Email link
        </Checkbox>
        <Checkbox className="checkbox" isSelected={passkeys} onChange={setPasskeys}>
          Passkeys
        </Checkbox>
      </fieldset>
      <RadioGroup className="field radios" value={signUp} onChange={(v) => setSignUp(v === 'closed' ? 'closed' : 'open')}>
        <Label>Sign-up</Label>
        <Radio value="open">Open: anyone can create an account</Radio>
        <Radio value="closed">Closed: only users you create can sign in</Radio>
      </RadioGroup>
      <RadioGroup className="field radios" value={mfa} onChange={(v) => setMfa(v === 'required' ? 'required' : 'optional')}>
        <Label>Second factor</Label>
        <Radio value="optional">Optional</Radio>
        <Radio value="required">Required for every user</Radio>
      </RadioGroup>
      <Button type="submit" className="button primary" isDisabled={update.isPending}>
        {update.isPending ? 'Saving…' : 'Save the settings'}
      </Button>
      <p role="status" className="status">
        {update.isSuccess ? 'Saved.' : ''}
      </p>
      <ErrorNotice error={update.error} title="The settings were not saved" />
    </Form>
  );
}

/** Deleting takes the application's name typed in full: everything it holds goes with it. */
function DeleteApplication({ id, name }: { id: string; name: string }) {
  const trpc = operator.useTRPC();
  const navigate = useNavigate();
  const [typed, setTyped] = useState('');
  const remove = useMutation(
    trpc.applications.delete.mutationOptions({
      onSuccess: async () => {
        forgetApplication(id);
        await refreshSession();
        await navigate({ to: '/apps' });
      },
    }),
  );
  return (
    <Form
      className="panel danger-zone"
      aria-labelledby="delete"
      onSubmit={(event) => {
        event.preventDefault();
        if (typed === name) remove.mutate({ id });
      }}
    >
      <h2 id="delete">Delete this application</h2>
      <p>Its users, organizations, keys, webhooks and events are deleted with it. This cannot be undone.</p>
      <TextField className="field" value={typed} onChange={setTyped} autoComplete="off">
        <Label>Type the application's name, {name}, to confirm</Label>
        <Input />
      </TextField>
      <Button type="submit" className="button danger" isDisabled={typed !== name || remove.isPending}>
        {remove.isPending ? 'Deleting…' : 'Delete the application'}
      </Button>
      <ErrorNotice error={remove.error} title="The application was not deleted" />
    </Form>
  );
}
