import type { ApplicationSettings } from '@gatehouse/api';
import type { Locale, Translate } from './catalog.ts';
import { type Html, html, trusted } from './html.ts';

/** What every hosted page is drawn with: the application's branding and name, the language, the response's nonces. */
export interface Frame {
  appName: string;
  branding: ApplicationSettings['branding'];
  locale: Locale;
  t: Translate;
  nonce: { script: string; style: string };
}

const COLOR = /^#[0-9a-f]{6}$/i;

/** The style of every page: a card in the middle; the primary colour and the theme come from the branding. */
function style(branding: Frame['branding']): string {
  const primary = branding.primary_color && COLOR.test(branding.primary_color) ? branding.primary_color : '#1f2937';
  const light = '--bg: #f6f7f9; --card: #fff; --text: #111827; --muted: #4b5563; --line: #d1d5db;';
  const dark = '--bg: #0b0f17; --card: #161b26; --text: #f3f4f6; --muted: #c4c9d4; --line: #3a4150;';
  const scheme =
    branding.theme === 'dark'
      ? `:root { ${dark} color-scheme: dark; }`
      : branding.theme === 'light'
        ? `:root { ${light} color-scheme: light; }`
        : `:root { ${light} color-scheme: light dark; } @media (prefers-color-scheme: dark) { :root { ${dark} } }`;
  return `${scheme}
:root { --primary: ${primary}; }
* { box-sizing: border-box; }
body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; min-height: 100vh; display: grid;
  place-items: center; background: var(--bg); color: var(--text); }
main { background: var(--card); width: min(26rem, 100vw - 2rem); padding: 2rem; border-radius: 12px;
  box-shadow: 0 1px 4px rgba(0,0,0,.12); }
.brand { display: flex; align-items: center; gap: .75rem; margin-bottom: 1rem; font-weight: 600; }
.brand img { max-height: 40px; max-width: 160px; }
h1 { font-size: 1.35rem; margin: 0 0 1rem; }
p { margin: 0 0 1rem; }
label { display: block; font-weight: 500; margin-bottom: .25rem; }
input[type=email], input[type=text] { width: 100%; font: inherit; padding: .6rem .75rem; border: 1px solid var(--line);
  border-radius: 8px; background: var(--card); color: var(--text); margin-bottom: 1rem; }
button, .button { display: inline-block; width: 100%; font: inherit; font-weight: 600; padding: .65rem 1rem; border: 0;
  border-radius: 8px; background: var(--primary); color: #fff; cursor: pointer; text-align: center; text-decoration: none; }
button.secondary, .button.secondary { background: transparent; color: var(--text); border: 1px solid var(--line); }
form + form, form + p, .stack > * + * { margin-top: .75rem; }
a { color: inherit; }
:focus-visible { outline: 3px solid var(--primary); outline-offset: 2px; }
.error { border-left: 4px solid #b91c1c; padding: .5rem .75rem; background: rgba(185,28,28,.08); }
.muted { color: var(--muted); font-size: .9rem; }
footer { margin-top: 1.5rem; }
`;
}

/**
 * A whole page: `title` is the heading (and the document title), `body` the card's content. `headExtra` is for what
 * a page adds to its head (a refresh while it waits).
 */
export function page(frame: Frame, title: string, body: Html, options: { headExtra?: Html } = {}): string {
  const { branding, t, nonce } = frame;
  const name = branding.display_name ?? frame.appName;
  return html`<!doctype html>
<html lang="${frame.locale}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${title} · ${name}</title>
${options.headExtra}
<style nonce="${nonce.style}">${trusted(style(branding))}</style>
</head>
<body>
<main>
<div class="brand">${branding.logo_url ? html`<img src="${branding.logo_url}" alt="${name}">` : html`<span>${name}</span>`}</div>
<h1>${title}</h1>
${body}
${branding.support_email ? html`<footer class="muted">${t('footer.support')} <a href="mailto:${branding.support_email}">${branding.support_email}</a></footer>` : ''}
</main>
</body>
</html>`.text;
}
