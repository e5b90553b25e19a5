/**
 * oidc-provider, loaded on first use: it is a third of the modules the server would otherwise load at start (with Koa),
 * and only applications that act as OpenID providers need it. Types stay static (`import type`); `providerFor` awaits
 * `loadOidcProvider()` before building a provider, so everything that runs inside one reads it with `oidcProvider()`.
 */
import type * as OidcProviderLibrary from 'oidc-provider';

let loading: Promise<typeof OidcProviderLibrary> | undefined;
let loaded: typeof OidcProviderLibrary | undefined;

/** Loads the library once; later calls return the same promise. */
export const loadOidcProvider = (): Promise<typeof OidcProviderLibrary> => {
  loading ??= import('oidc-provider').then((library) => {
    loaded = library;
    return library;
  });
  return loading;
};

/** The library, once `loadOidcProvider()` has resolved: every provider's code runs after `providerFor` loaded it. */
export function oidcProvider(): typeof OidcProviderLibrary {
  if (!loaded) throw new Error('oidc-provider is used before loadOidcProvider() resolved');
  return loaded;
}
