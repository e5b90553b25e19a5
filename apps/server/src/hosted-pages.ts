/** The CSP nonces of a response (helmet) for its inline script and style. */
type Nonces = { script: string; style: string };

/** The frame every hosted page shares: one card in the middle of the page, its own style rules and body after it. */
const hostedPage = (nonce: Nonces, style: string, body: string) => `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="robots" content="noindex">
  <title>Sign in</title>
  <style nonce="${nonce.style}">
    body { font-family: system-ui, sans-serif; display: grid; place-items: center; min-height: 100vh; margin: 0; background: #f6f7f9; }
    main { background: #fff; padding: 2rem 2.5rem; border-radius: 12px; box-shadow: 0 1px 4px rgba(0,0,0,.08); max-width: 26rem; }
${style}  </style>
</head>
<body>
${body}</body>
</html>`;

/**
 * The hosted magic-link page (`{GATEHOUSE_BASE_URL}/sign-in/verify`), the cross-device half of a magic link without
 * a redirect URL: opening it consumes nothing; the person confirms with a button, which POSTs the token to
 * `magic-link/confirm` — so mail scanners that follow links cannot use them up — and the device that asked for the
 * link (polling with its secret) is signed in, not this page. Inline script and style carry the CSP nonces of the
 * response (helmet).
 */
export const hostedVerifyHtml = (nonce: Nonces) =>
  hostedPage(
    nonce,
    `    button { font: inherit; padding: .6rem 1.4rem; border-radius: 8px; border: 0; background: #1f2937; color: #fff; cursor: pointer; }
    button[disabled] { opacity: .5; cursor: default; }
    #status { margin-top: 1rem; }
`,
    `<main>
  <h1>Sign in</h1>
  <p id="prompt">Sign in on the device where you asked for this link?</p>
  <form id="confirm"><button type="submit">Yes, sign me in</button></form>
  <p id="status" role="status"></p>
</main>
<script nonce="${nonce.script}">
  const params = new URLSearchParams(location.search);
  const token = params.get('token');
  const applicationId = params.get('application_id');
  const status = document.getElementById('status');
  const form = document.getElementById('confirm');
  const button = form.querySelector('button');
  // The token leaves the address bar (and the history) once read.
  history.replaceState(null, '', location.pathname);
  if (!token || !applicationId) {
    status.textContent = 'This link is incomplete. Ask for a new one.';
    button.disabled = true;
  }
  form.onsubmit = async (event) => {
    event.preventDefault(); button.disabled = true;
    status.textContent = 'Signing in…';
    try {
      const response = await fetch('/v1/auth/magic-link/confirm', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-application-id': applicationId },
        body: JSON.stringify({ token }),
      });
      const result = await response.json();
      if (!result.success) { status.textContent = result.error.message; return; }
      form.remove();
      // The asking device collects the sign-in: it may still need a second factor or consent, or be refused there.
      document.getElementById('prompt').textContent = 'Confirmed.';
      status.textContent = 'Go back to the device where you asked for the link: it continues from there. You can close this tab.';
    } catch {
      status.textContent = 'Something went wrong. Try again.'; button.disabled = false;
    }
  };
</script>
`,
  );
