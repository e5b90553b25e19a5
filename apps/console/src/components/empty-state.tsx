import type { ReactNode } from 'react';
import { CopyButton } from './copy-button.tsx';

/** Nothing here yet: what to do in the page, and the same with the CLI and with curl. */
export function EmptyState({ title, children, cli, curl }: { title: string; children?: ReactNode; cli: string; curl: string }) {
  return (
    <section className="empty" aria-label={title}>
      <h3>{title}</h3>
      {children}
      <Snippet label="With the CLI" code={cli} />
      <Snippet label="With curl" code={curl} />
    </section>
  );
}

export function Snippet({ label, code }: { label: string; code: string }) {
  return (
    <div className="snippet">
      <div className="snippet-head">
        <span>{label}</span>
        <CopyButton value={code} label={`Copy the command: ${label.toLowerCase()}`} />
      </div>
      <pre>
        <code>{code}</code>
      </pre>
    </div>
  );
}

/**
 * The curl command of an EmptyState: `curl -s` (with `-X method`) of a URL under $GATEHOUSE, with the operator token or
 * with the secret key and the application's id, and a JSON body.
 */
export function curl(
  path: string,
  { method, body, operator = false }: { method?: 'POST' | 'PUT'; body?: string; operator?: boolean } = {},
): string {
  const auth = operator
    ? '-H "authorization: Bearer $OPERATOR_TOKEN"'
    : '-H "authorization: Bearer $SECRET_KEY" -H "x-application-id: $APP"';
  const call = `curl -s${method ? ` -X ${method}` : ''} "$GATEHOUSE${path}" \\\n  ${auth}`;
  return body === undefined ? call : `${call} -H 'content-type: application/json' \\\n  -d '${body}'`;
}
