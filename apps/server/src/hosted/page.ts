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

/** WCAG's relative luminance of an sRGB colour `#rrggbb`. */
function luminance(hex: string): number {
  const channel = (i: number) => {
    const c = Number.parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
}

/** WCAG's contrast ratio of two colours. */
function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return ((hi ?? 0) + 0.05) / ((lo ?? 0) + 0.05);
}

/** The style of every page: a card in the middle; the primary colour and the theme come from the branding. */
function style(branding: Frame['branding']): string {
  const branded = branding.primary_color && COLOR.test(branding.primary_color) ? branding.primary_color : undefined;
  // Text on the primary colour: white, or near-black on a light one (contrast of 4.5:1 either way, WCAG 1.4.3).
  const onPrimary = (primary: string) => (contrast(primary, '#ffffff') >= 4.5 ? '#fff' : '#111827');
  // Without a brand colour, buttons are near-black on light pages and near-white on dark ones.
  const primary = (fallback: string) => {
    const chosen = branded ?? fallback;
    return `--primary: ${chosen}; --on-primary: ${onPrimary(chosen)};`;
  };
  const light = `--bg: #f6f7f9; --card: #fff; --text: #111827; --muted: #4b5563; --line: #d1d5db; ${primary('#1f2937')}`;
  const dark = `--bg: #0b0f17; --card: #161b26; --text: #f3f4f6; --muted: #c4c9d4; --line: #3a4150; ${primary('#e5e7eb')}`;
  const scheme =
    branding.theme === 'dark'
      ? `:root { ${dark} color-scheme: dark; }`
      : branding.theme === 'light'
        ? `:root { ${light} color-scheme: light; }`
        : `:root { ${light} color-scheme: light dark; } @media (prefers-color-scheme: dark) { :root { ${dark} } }`;
  return `${scheme}
* { box-sizing: border-box; }
body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; min-height: 100vh; display: grid;
  place-items: center; padding: 1rem 0; background: var(--bg); color: var(--text); }
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
  border-radius: 8px; background: var(--primary); color: var(--on-primary); cursor: pointer; text-align: center; text-decoration: none; }
button.secondary, .button.secondary { background: transparent; color: var(--text); border: 1px solid var(--line); }
form + form, form + p, .stack > * + * { margin-top: .75rem; }
a { color: inherit; }
:focus-visible { outline: 3px solid var(--primary); outline-offset: 2px; }
.error { border-left: 4px solid #b91c1c; padding: .5rem .75rem; background: rgba(185,28,28,.08); }
.muted { color: var(--muted); font-size: .9rem; }
footer { margin-top: 1.5rem; }
main.wide { width: min(36rem, 100vw - 2rem); }
h2 { font-size: 1.1rem; margin: 0 0 .5rem; }
section { border-top: 1px solid var(--line); padding-top: 1rem; margin-top: 1.25rem; }
ul.items { list-style: none; padding: 0; margin: 0 0 1rem; }
ul.items li + li { border-top: 1px solid var(--line); padding-top: .75rem; margin-top: .75rem; }
ul.items form, section form + form { margin-top: .5rem; }
strong, code { overflow-wrap: anywhere; }
.tag { font-size: .8rem; font-weight: 600; border: 1px solid var(--line); border-radius: 999px; padding: 0 .5rem; }
.notice { border-left: 4px solid var(--line); padding: .5rem .75rem; background: rgba(127,127,127,.1); }
.notice p:last-child { margin-bottom: 0; }
.qr-box { display: flex; justify-content: center; margin-bottom: 1rem; }
code.secret { font-size: 1.05rem; letter-spacing: .05em; }
ul.codes { columns: 2; font-size: 1.05rem; }
`;
}

/**
 * A whole page: `title` is the heading (and the document title), `body` the card's content. `headExtra` is for what
 * a page adds to its head (a refresh while it waits); `wide` for a page of several sections (the account page).
 */
export function page(frame: Frame, title: string, body: Html, options: { headExtra?: Html; wide?: boolean } = {}): string {
  const { branding, t, nonce } = frame;
  const name = branding.display_name ?? frame.appName;
  return html`<!doctype html>
<html lang="${frame.locale}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${title} &middot; ${name}</title>
${options.headExtra}
<style nonce="${nonce.style}">${trusted(style(branding))}</style>
</head>
<body>
<main${options.wide ? html` class="wide"` : ''}>
<div class="brand">${branding.logo_url ? html`<img src="${branding.logo_url}" alt="${name}">` : html`<span>${name}</span>`}</div>
<h1>${title}</h1>
${body}
${branding.support_email ? html`<footer class="muted">${t('footer.support')} <a href="mailto:${branding.support_email}">${branding.support_email}</a></footer>` : ''}
</main>
</body>
</html>`.text;
}
