import type { ReactNode } from 'react';

/**
 * A box that may scroll (a long table, a JSON document): a named region (a section with a name) that takes the focus, so the keyboard scrolls
 * it too (WCAG 2.1.1; axe's scrollable-region-focusable).
 */
export function ScrollRegion({ label, className, children }: { label: string; className: string; children: ReactNode }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling box needs the focus for the keyboard to scroll it.
    <section aria-label={label} tabIndex={0} className={className}>
      {children}
    </section>
  );
}
