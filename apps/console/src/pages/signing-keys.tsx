import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useParams } from '@tanstack/react-router';
import { app } from '../api.ts';
import { ConfirmButton } from '../components/confirm.tsx';
import { CopyButton } from '../components/copy-button.tsx';
import { curl, EmptyState } from '../components/empty-state.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { ListTable } from '../components/list-table.tsx';

/**
 * The application's signing keys as its JWKS publishes them, newest first: the first is the one new tokens are signed
 * with, the others are retired keys still published until the tokens they signed have expired. Rotate, after a
 * confirmation.
 */
export function SigningKeysPage() {
  const { appId } = useParams({ from: '/apps/$appId/signing-keys' });
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const jwks = useQuery(trpc.signingKeys.jwks.queryOptions({ id: appId }));
  const discovery = useQuery(trpc.signingKeys.discovery.queryOptions({ id: appId }));
  const rotate = useMutation(
    trpc.signingKeys.rotate.mutationOptions({
      onSuccess: ({ keys }) => queryClient.setQueryData(trpc.signingKeys.jwks.queryKey({ id: appId }), { keys }),
    }),
  );
  const keys = jwks.data?.keys;

  return (
    <section>
      <h1>Signing keys</h1>
      <p>
        Gatehouse signs this application's access tokens with an Ed25519 key. Your servers verify them with the public keys below,
        read from the JWKS address. After a rotation new tokens are signed with the new key; the old key stays published until the
        tokens it signed have expired, so nothing your users hold stops working.
      </p>
      {discovery.data && (
        <p>
          JWKS address: <code className="wrap">{discovery.data.jwks_uri}</code>{' '}
          <CopyButton value={discovery.data.jwks_uri} label="Copy the JWKS address" />
        </p>
      )}
      {jwks.isPending && <p role="status">Loading the keys…</p>}
      <ErrorNotice error={jwks.error} title="The keys could not be read" />
      <ErrorNotice error={rotate.error} title="The key was not rotated" />
      {rotate.data && (
        <p className="notice success" role="status">
          New key <code>{rotate.data.kid}</code> is in use. The previous key is still published for the tokens it signed.
        </p>
      )}
      {keys && (
        <ListTable
          caption="Published signing keys, newest first"
          columns={['Key id (kid)', 'Status', 'Algorithm']}
          rows={keys}
          rowKey={(key) => key.kid}
          empty={
            <EmptyState
              title="No signing key"
              cli="npx gatehouse signing-keys rotate"
              curl={curl('/v1/applications/$APP/signing-keys/rotate', { method: 'POST' })}
            />
          }
        >
          {(key, i) => (
            <>
              <td>
                <code>{key.kid}</code> <CopyButton value={key.kid} label={`Copy the key id ${key.kid}`} />
              </td>
              <td>
                {i === 0 ? (
                  <span className="badge active">signing new tokens</span>
                ) : (
                  <span className="badge">retired, still published</span>
                )}
              </td>
              <td>
                {key.alg} ({key.crv})
              </td>
            </>
          )}
        </ListTable>
      )}
      <section className="panel" aria-labelledby="rotate">
        <h2 id="rotate">Rotate the key</h2>
        <p>Do it on a schedule, or at once if you think the private key was exposed.</p>
        <ConfirmButton
          label="Rotate the signing key"
          title="Rotate the signing key?"
          confirmLabel="Rotate the key"
          isDisabled={rotate.isPending}
          onConfirm={() => rotate.mutate({ id: appId })}
        >
          <p>
            New tokens are signed with a new key at once. Servers that cache the JWKS fetch it again when they see the new key id.
          </p>
        </ConfirmButton>
      </section>
    </section>
  );
}
