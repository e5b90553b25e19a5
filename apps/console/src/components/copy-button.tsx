import { useState } from 'react';
import { Button } from 'react-aria-components';

/** Copies `value` to the clipboard; says so (politely, to screen readers too) for a moment. */
export function CopyButton({ value, label }: { value: string; label: string }) {
  const [copied, setCopied] = useState<'yes' | 'failed' | null>(null);
  return (
    <span className="copy">
      <Button
        className="button small"
        aria-label={label}
        onPress={() => {
          navigator.clipboard.writeText(value).then(
            () => setCopied('yes'),
            () => setCopied('failed'),
          );
          setTimeout(() => setCopied(null), 2_000);
        }}
      >
        Copy
      </Button>
      <span role="status" className="copy-status">
        {copied === 'yes' ? 'Copied' : copied === 'failed' ? 'Select and copy it by hand' : ''}
      </span>
    </span>
  );
}
