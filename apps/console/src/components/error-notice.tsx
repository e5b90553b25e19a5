import { describeError } from '../api.ts';
import { CopyButton } from './copy-button.tsx';

/** An error as the server gave it: its message, its code, and the request id to quote (with a copy button). */
export function ErrorNotice({ error, title = 'That did not work' }: { error: unknown; title?: string }) {
  if (!error) return null;
  const { message, code, status, requestId } = describeError(error);
  return (
    <div className="notice error" role="alert">
      <p className="notice-title">{title}</p>
      <p>{message}</p>
      <p className="meta">
        {status !== null && <span>HTTP {status}</span>}
        {code && (
          <span>
            code <code>{code}</code>
          </span>
        )}
        {requestId && (
          <span>
            request id <code>{requestId}</code> <CopyButton value={requestId} label="Copy the request id" />
          </span>
        )}
      </p>
    </div>
  );
}
