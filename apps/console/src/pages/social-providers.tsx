import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate, useParams, useSearch } from '@tanstack/react-router';
import { useState } from 'react';
import { Button, Checkbox, Form, Input, Label, Text, TextArea, TextField } from 'react-aria-components';
import { app, type Outputs } from '../api.ts';
import { ConfirmButton } from '../components/confirm.tsx';
import { CopyButton } from '../components/copy-button.tsx';
import { curl, EmptyState } from '../components/empty-state.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { ListTable } from '../components/list-table.tsx';
import { splitList, when } from '../format.ts';
import type { SocialProvider } from '../search.ts';
import { useSession } from '../session.ts';

type ProviderSetting = Outputs['providers']['list'][number];

const LABELS: Record<SocialProvider, string> = {
  google: 'Google',
  github: 'GitHub',
  microsoft: 'Microsoft',
  apple: 'Apple',
  gitlab: 'GitLab',
  discord: 'Discord',
  slack: 'Slack',
  linkedin: 'LinkedIn',
  oidc: 'OpenID Connect (any issuer)',
};

/** Whose OAuth client signs people in: the application's own, the operator's shared one (development), or none yet. */
const credentials = (p: ProviderSetting) =>
  p.use_shared_dev_credentials ? 'shared (development)' : p.client_id ? 'own client' : 'none';

/**
 * The application's social sign-in providers: each one's credentials and status; configure one (`?provider=`; the
 * client secret is write-only), enable or disable it, reset it (disabled, client id and secret forgotten).
 */
export function SocialProvidersPage() {
  const { appId } = useParams({ from: '/apps/$appId/sign-in/social' });
  const { provider: selected } = useSearch({ from: '/apps/$appId/sign-in/social' });
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const providers = useQuery(trpc.providers.list.queryOptions({ id: appId }));
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.providers.list.queryKey() });
  const put = useMutation(trpc.providers.put.mutationOptions({ onSuccess: refresh }));
  const reset = useMutation(trpc.providers.reset.mutationOptions({ onSuccess: refresh }));
  const current = providers.data?.find((p) => p.provider === selected);
  // The server's own address: the console is served at {base}/console/ (see docs/console.md).
  const redirectUri = `${location.origin}/v1/auth/oauth/redirect`;

  return (
    <section>
      <h1>Social providers</h1>
      <p>
        People sign in with an account they already have. Register an OAuth client with each provider, with this redirect URI, and
        enter its client id and secret here:
      </p>
      <p className="secret">
        <code>{redirectUri}</code> <CopyButton value={redirectUri} label="Copy the redirect URI" />
      </p>
      {providers.isPending && <p role="status">Loading the providers…</p>}
      <ErrorNotice error={providers.error} title="The providers could not be listed" />
      <ErrorNotice error={put.error} title="The provider was not changed" />
      <ErrorNotice error={reset.error} title="The provider was not reset" />
      {providers.data?.every((p) => p.updated_at === null) && (
        <EmptyState
          title="No provider configured yet"
          cli="npx gatehouse providers set google --client-id <id> --client-secret <secret> --enabled true"
          curl={curl('/v1/applications/$APP/providers/oauth/google', {
            method: 'PUT',
            body: '{"client_id": "<id>", "client_secret": "<secret>", "enabled": true}',
          })}
        />
      )}
      {providers.data && (
        <ListTable
          caption="Social providers"
          columns={['Provider', 'Credentials', 'Client secret', 'Status', 'Changed']}
          actions="Actions"
          rows={providers.data}
          rowKey={(p) => p.provider}
          current={(p) => p.provider === selected}
          className="break-code"
        >
          {(p) => {
            const label = LABELS[p.provider];
            return (
              <>
                <td>{label}</td>
                <td>
                  {credentials(p)}
                  {p.client_id && !p.use_shared_dev_credentials && (
                    <div className="meta">
                      <code>{p.client_id}</code>
                    </div>
                  )}
                </td>
                <td>{p.has_secret ? 'stored' : '—'}</td>
                <td>
                  <span className={`badge ${p.enabled ? 'active' : 'disabled'}`}>{p.enabled ? 'enabled' : 'disabled'}</span>
                </td>
                <td>{when(p.updated_at, 'never')}</td>
                <td className="row-actions">
                  <Link
                    from="/apps/$appId/sign-in/social"
                    search={{ provider: p.provider }}
                    className="button small"
                    aria-label={`Configure ${label}`}
                  >
                    Configure
                  </Link>
                  {p.updated_at !== null && (
                    <Button
                      className="button small"
                      aria-label={`${p.enabled ? 'Disable' : 'Enable'} ${label}`}
                      isDisabled={put.isPending}
                      onPress={() => put.mutate({ id: appId, provider: p.provider, enabled: !p.enabled })}
                    >
                      {p.enabled ? 'Disable' : 'Enable'}
                    </Button>
                  )}
                  {p.updated_at !== null && (
                    <ConfirmButton
                      label="Remove"
                      ariaLabel={`Remove ${label}`}
                      title={`Remove ${label}?`}
                      confirmLabel="Remove the provider"
                      isDisabled={reset.isPending}
                      onConfirm={() => reset.mutate({ id: appId, provider: p.provider })}
                    >
                      <p>
                        It is disabled and its client id and secret are forgotten. People who signed in with it keep their
                        accounts, and sign in another way until it is configured again.
                      </p>
                    </ConfirmButton>
                  )}
                </td>
              </>
            );
          }}
        </ListTable>
      )}
      {current && <ConfigureProvider key={`${current.provider}-${current.updated_at}`} appId={appId} setting={current} />}
    </section>
  );
}

/** A provider's settings. The secret field starts empty: left empty, the stored secret is kept. */
function ConfigureProvider({ appId, setting }: { appId: string; setting: ProviderSetting }) {
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const navigate = useNavigate({ from: '/apps/$appId/sign-in/social' });
  const development = useSession()?.applications.find((a) => a.id === appId)?.environment === 'development';
  const label = LABELS[setting.provider];
  const [clientId, setClientId] = useState(setting.client_id ?? '');
  const [secret, setSecret] = useState('');
  const [scopes, setScopes] = useState(setting.scopes.join(' '));
  const [issuer, setIssuer] = useState(setting.issuer ?? '');
  const [shared, setShared] = useState(setting.use_shared_dev_credentials);
  const [enabled, setEnabled] = useState(setting.enabled || setting.updated_at === null);
  const put = useMutation(
    trpc.providers.put.mutationOptions({
      onSuccess: async () => {
        setSecret('');
        await queryClient.invalidateQueries({ queryKey: trpc.providers.list.queryKey() });
        await navigate({ search: {} });
      },
    }),
  );
  const close = () => void navigate({ search: {} });
  const secretField = setting.provider === 'apple' ? <TextArea rows={5} spellCheck={false} /> : <Input type="password" />;

  return (
    <Form
      className="panel"
      aria-labelledby="configure-provider"
      onSubmit={(event) => {
        event.preventDefault();
        const scopeList = splitList(scopes);
        put.mutate({
          id: appId,
          provider: setting.provider,
          enabled,
          ...(shared ? {} : clientId.trim() ? { client_id: clientId.trim() } : {}),
          ...(secret ? { client_secret: secret } : {}),
          ...(scopeList.length ? { scopes: scopeList } : {}),
          ...(setting.provider === 'oidc' && issuer.trim() ? { issuer: issuer.trim() } : {}),
          ...(development || setting.use_shared_dev_credentials ? { use_shared_dev_credentials: shared } : {}),
        });
      }}
    >
      <h2 id="configure-provider">Configure {label}</h2>
      {(development || setting.use_shared_dev_credentials) && (
        <Checkbox className="checkbox" isSelected={shared} onChange={setShared}>
          Use the server's shared development client (development applications only)
        </Checkbox>
      )}
      {setting.provider === 'oidc' && (
        <TextField className="field" type="url" value={issuer} onChange={setIssuer} maxLength={2048} isRequired>
          <Label>Issuer</Label>
          <Input placeholder="https://idp.example.com" />
          <Text slot="description">Its discovery document is loaded when you save.</Text>
        </TextField>
      )}
      {!shared && (
        <>
          <TextField className="field" value={clientId} onChange={setClientId} maxLength={512}>
            <Label>Client id</Label>
            <Input autoComplete="off" />
          </TextField>
          <TextField className="field" value={secret} onChange={setSecret} maxLength={8192}>
            <Label>Client secret</Label>
            {secretField}
            <Text slot="description">
              {setting.has_secret
                ? 'A secret is stored; it is never shown. Leave this empty to keep it, or enter a new one.'
                : 'Stored encrypted and never shown again.'}
              {setting.provider === 'apple' && ' Apple: TEAM_ID:KEY_ID: followed by the .p8 private key (PEM).'}
            </Text>
          </TextField>
        </>
      )}
      <TextField className="field" value={scopes} onChange={setScopes}>
        <Label>Scopes</Label>
        <Input />
        <Text slot="description">Separated by spaces; empty keeps the provider's sign-in scopes.</Text>
      </TextField>
      <Checkbox className="checkbox" isSelected={enabled} onChange={setEnabled}>
        Enabled: show "Continue with {label}" on the sign-in page
      </Checkbox>
      <div className="actions">
        <Button type="submit" className="button primary" isDisabled={put.isPending}>
          {put.isPending ? 'Saving…' : `Save ${label}`}
        </Button>
        <Button className="button" onPress={close}>
          Cancel
        </Button>
      </div>
      <ErrorNotice error={put.error} title={`${label} was not saved`} />
    </Form>
  );
}
