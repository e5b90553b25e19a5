/**
 * The hosted magic-link page (`{GATEHOUSE_BASE_URL}/sign-in/verify`). Opening it consumes nothing: the person
 * confirms with a button, which POSTs the token — so mail scanners that follow links cannot use them up.
 */
export const HOSTED_VERIFY_HTML = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="robots" content="noindex">
  <title>Sign in</title>
  <style>
    body { font-family: system-ui, sans-serif; display: grid; place-items: center; min-height: 100vh; margin: 0; background: #f6f7f9; }
    main { background: #fff; padding: 2rem 2.5rem; border-radius: 12px; box-shadow: 0 1px 4px rgba(0,0,0,.08); max-width: 26rem; }
    button { font: inherit; padding: .6rem 1.4rem; border-radius: 8px; border: 0; background: #1f2937; color: #fff; cursor: pointer; }
    button[disabled] { opacity: .5; cursor: default; }
    #status { margin-top: 1rem; }
  </style>
</head>
<body>
<main>
  <h1>Sign in</h1>
  <p id="prompt">Confirm that you want to sign in on this device.</p>
  <form id="confirm"><button type="submit">Sign in</button></form>
  <ul id="documents"></ul>
  <p id="status" role="status"></p>
</main>
<script>
  const params = new URLSearchParams(location.search);
  const token = params.get('token');
  const applicationId = params.get('application_id');
  const status = document.getElementById('status');
  const form = document.getElementById('confirm');
  const button = form.querySelector('button');
  // The token leaves the address bar (and the history) once read.
  history.replaceState(null, '', location.pathname);
  const call = async (path, body) => {
    const response = await fetch(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-application-id': applicationId },
      body: JSON.stringify(body),
    });
    return response.json();
  };
  const show = (result) => {
    if (!result.success) { status.textContent = result.error.message; return; }
    const data = result.data;
    if (data.status === 'complete') {
      status.textContent = 'You are signed in. You can close this page and return to the application.';
      form.remove();
    } else if (data.status === 'consent_required') {
      const list = document.getElementById('documents');
      for (const doc of data.consent_documents) {
        const item = document.createElement('li');
        const link = document.createElement('a');
        link.href = doc.url; link.target = '_blank'; link.rel = 'noopener';
        link.textContent = doc.doc_type + ' (version ' + doc.version + ')';
        item.append(link); list.append(item);
      }
      document.getElementById('prompt').textContent = 'Please read and accept these documents to continue.';
      button.textContent = 'Accept and continue'; button.disabled = false;
      form.onsubmit = async (event) => {
        event.preventDefault(); button.disabled = true;
        show(await call('/v1/auth/consent/accept', { pending_token: data.pending_token, doc_types: data.consent_documents.map((d) => d.doc_type) }));
      };
    } else {
      status.textContent = 'Continue in the application to finish signing in with your second factor.';
      form.remove();
    }
  };
  if (!token || !applicationId) {
    status.textContent = 'This link is incomplete. Ask for a new one.';
    button.disabled = true;
  }
  form.onsubmit = async (event) => {
    event.preventDefault(); button.disabled = true;
    status.textContent = 'Signing in…';
    try { show(await call('/v1/auth/magic-link/verify', { token })); }
    catch { status.textContent = 'Something went wrong. Try again.'; button.disabled = false; }
  };
</script>
</body>
</html>`;
