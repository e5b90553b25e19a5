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
