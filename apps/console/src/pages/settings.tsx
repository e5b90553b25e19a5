import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate, useParams } from '@tanstack/react-router';
import { useEffect, useState } from 'react';
import {
  Button,
  Checkbox,
  FileTrigger,
  Form,
  Input,
  Label,
  Radio,
  RadioGroup,
  Text,
  TextArea,
  TextField,
} from 'react-aria-components';
import { app, forgetApplication, type Outputs, operator } from '../api.ts';
import { ErrorNotice } from '../components/error-notice.tsx';
import { splitList } from '../format.ts';
import { refreshSession } from '../session.ts';

/** An application's settings: name, allowed origins, sign-in methods, MFA policy; its branding; and deleting it. */
export function SettingsPage() {
  const { appId } = useParams({ from: '/apps/$appId/settings' });
  const trpc = app.useTRPC();
  const application = useQuery(trpc.applications.get.queryOptions({ id: appId }));

  return (
    <section>
      <h1>Settings</h1>
      {application.isPending && <p role="status">Loading the settings…</p>}
      <ErrorNotice error={application.error} title="The settings could not be read" />
      {application.data && <SettingsForm application={application.data} />}
      {application.data && <BrandingForm application={application.data} />}
      {application.data && <DeleteApplication id={appId} name={application.data.name} />}
    </section>
  );
}

type Application = Outputs['applications']['get'];

function SettingsForm({ application }: { application: Application }) {
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const [name, setName] = useState(application.name);
  const [origins, setOrigins] = useState(application.allowed_origins.join('\n'));
  const [magicLink, setMagicLink] = useState(application.settings.sign_in.magic_link);
  const [passkeys, setPasskeys] = useState(application.settings.sign_in.passkeys);
  const [signUp, setSignUp] = useState(application.settings.sign_up);
  const [mfa, setMfa] = useState(application.settings.mfa);
  const update = useMutation(
    trpc.applications.update.mutationOptions({
      onSuccess: (saved) => {
        queryClient.setQueryData(trpc.applications.get.queryKey({ id: saved.id }), saved);
        void refreshSession();
      },
    }),
  );
  // A saved answer is the truth: the form shows what the server kept (trimmed names, normalised origins).
  useEffect(() => {
    setName(application.name);
    setOrigins(application.allowed_origins.join('\n'));
  }, [application]);

  return (
    <Form
      className="panel"
      aria-labelledby="general"
      onSubmit={(event) => {
        event.preventDefault();
        update.mutate({
          id: application.id,
          name,
          allowed_origins: splitList(origins),
          settings: { sign_in: { magic_link: magicLink, passkeys }, sign_up: signUp, mfa },
        });
      }}
    >
      <h2 id="general">General</h2>
      <TextField className="field" isRequired value={name} onChange={setName} maxLength={200}>
        <Label>Name</Label>
        <Input />
      </TextField>
      <TextField className="field" value={origins} onChange={setOrigins}>
        <Label>Allowed origins</Label>
        <TextArea rows={3} />
        <Text slot="description">
          One per line, exactly as a browser sends it (https://app.example.com). Used for CORS and passkeys.
        </Text>
      </TextField>
      <fieldset className="field">
        <legend>Sign-in methods on the hosted page</legend>
        <Checkbox className="checkbox" isSelected={magicLink} onChange={setMagicLink}>
          Email link
        </Checkbox>
        <Checkbox className="checkbox" isSelected={passkeys} onChange={setPasskeys}>
          Passkeys
        </Checkbox>
      </fieldset>
      <RadioGroup className="field radios" value={signUp} onChange={(v) => setSignUp(v === 'closed' ? 'closed' : 'open')}>
        <Label>Sign-up</Label>
        <Radio value="open">Open: anyone can create an account</Radio>
        <Radio value="closed">Closed: only users you create can sign in</Radio>
      </RadioGroup>
      <RadioGroup className="field radios" value={mfa} onChange={(v) => setMfa(v === 'required' ? 'required' : 'optional')}>
        <Label>Second factor</Label>
        <Radio value="optional">Optional</Radio>
        <Radio value="required">Required for every user</Radio>
      </RadioGroup>
      <Button type="submit" className="button primary" isDisabled={update.isPending}>
        {update.isPending ? 'Saving…' : 'Save the settings'}
      </Button>
      <p role="status" className="status">
        {update.isSuccess ? 'Saved.' : ''}
      </p>
      <ErrorNotice error={update.error} title="The settings were not saved" />
    </Form>
  );
}

type Branding = Application['settings']['branding'];
const THEMES = ['auto', 'light', 'dark'] as const;
/** The images the server takes as a logo (SVG is refused: it can carry script), and their most bytes. */
const LOGO_TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'] as const;
type LogoType = (typeof LOGO_TYPES)[number];
const MAX_LOGO_BYTES = 256 * 1024;
const COLOR = /^#[0-9a-fA-F]{6}$/;

/** A file's bytes as base64 (what the logo upload takes). */
const base64Of = (file: File) =>
  new Promise<string>((resolve, reject) => {
    const reader = new FileReader();
    // readAsDataURL answers a string: `data:<type>;base64,<bytes>`.
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ''));
    reader.onerror = () => reject(reader.error ?? new Error('The file could not be read'));
    reader.readAsDataURL(file);
  });

/**
 * The look of the hosted pages (settings.branding): display name, logo (uploaded, or an https address), primary colour,
 * light or dark, support address; with a small preview of the name, logo and colour.
 */
function BrandingForm({ application }: { application: Application }) {
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const saved = application.settings.branding;
  const [displayName, setDisplayName] = useState(saved.display_name ?? '');
  const [logoUrl, setLogoUrl] = useState(saved.logo_url ?? '');
  const [color, setColor] = useState(saved.primary_color ?? '');
  const [theme, setTheme] = useState<Branding['theme']>(saved.theme);
  const [support, setSupport] = useState(saved.support_email ?? '');
  const [fileProblem, setFileProblem] = useState<string | null>(null);
  const applicationKey = trpc.applications.get.queryKey({ id: application.id });
  const update = useMutation(
    trpc.applications.update.mutationOptions({ onSuccess: (next) => queryClient.setQueryData(applicationKey, next) }),
  );
  const afterLogo = () => queryClient.invalidateQueries({ queryKey: applicationKey });
  const upload = useMutation(
    trpc.applications.branding.setLogo.mutationOptions({
      onSuccess: (logo) => {
        setLogoUrl(logo.logo_url);
        void afterLogo();
      },
    }),
  );
  const removeLogo = useMutation(
    trpc.applications.branding.removeLogo.mutationOptions({
      onSuccess: () => {
        setLogoUrl('');
        void afterLogo();
      },
    }),
  );
  useEffect(() => {
    setDisplayName(saved.display_name ?? '');
    setLogoUrl(saved.logo_url ?? '');
    setColor(saved.primary_color ?? '');
    setTheme(saved.theme);
    setSupport(saved.support_email ?? '');
  }, [saved]);

  const chooseLogo = async (files: FileList | null) => {
    const file = files?.[0];
    setFileProblem(null);
    if (!file) return;
    const type = LOGO_TYPES.find((t) => t === file.type);
    if (!type) return setFileProblem('Choose a PNG, JPEG, WebP or GIF image (SVG is not accepted).');
    if (file.size > MAX_LOGO_BYTES) return setFileProblem('The image is larger than 256 KiB.');
    upload.mutate({ id: application.id, content_type: type satisfies LogoType, data: await base64Of(file) });
  };
  const shownColor = COLOR.test(color) ? color : null;
  const shownName = displayName.trim() || application.name;
  // The console's own policy loads images from itself and https addresses only: anything else is not previewed.
  const shownLogo = logoUrl.startsWith('https://') || logoUrl.startsWith(`${location.origin}/`) ? logoUrl : null;

  return (
    <Form
      className="panel"
      aria-labelledby="branding"
      onSubmit={(event) => {
        event.preventDefault();
        update.mutate({
          id: application.id,
          settings: {
            branding: {
              display_name: displayName.trim() || null,
              logo_url: logoUrl.trim() || null,
              primary_color: color.trim() || null,
              theme,
              support_email: support.trim() || null,
            },
          },
        });
      }}
    >
      <h2 id="branding">Branding</h2>
      <p>How the hosted sign-in pages look, and the name in the mail they send.</p>
      <div className="branding">
        <div>
          <TextField className="field" value={displayName} onChange={setDisplayName} maxLength={100}>
            <Label>Display name</Label>
            <Input placeholder={application.name} />
            <Text slot="description">Empty: the application's name.</Text>
          </TextField>
          <TextField className="field" type="url" value={logoUrl} onChange={setLogoUrl} maxLength={2048}>
            <Label>Logo address</Label>
            <Input placeholder="https://example.com/logo.png" />
            <Text slot="description">An https address, or upload an image: PNG, JPEG, WebP or GIF, at most 256 KiB.</Text>
          </TextField>
          <div className="actions">
            <FileTrigger acceptedFileTypes={[...LOGO_TYPES]} onSelect={(files) => void chooseLogo(files)}>
              <Button className="button small" isDisabled={upload.isPending}>
                {upload.isPending ? 'Uploading…' : 'Upload a logo'}
              </Button>
            </FileTrigger>
            {saved.logo_url && (
              <Button
                className="button small"
                isDisabled={removeLogo.isPending}
                onPress={() => removeLogo.mutate({ id: application.id })}
              >
                Remove the logo
              </Button>
            )}
          </div>
          {fileProblem && (
            <p className="notice error" role="alert">
              {fileProblem}
            </p>
          )}
          <ErrorNotice error={upload.error} title="The logo was not uploaded" />
          <ErrorNotice error={removeLogo.error} title="The logo was not removed" />
          <TextField className="field" value={color} onChange={setColor} maxLength={7} isInvalid={color !== '' && !shownColor}>
            <Label>Primary colour</Label>
            <Input placeholder="#4f46e5" />
            <Text slot="description">As #rrggbb. Empty: Gatehouse's own.</Text>
          </TextField>
          <RadioGroup className="field radios" value={theme} onChange={(v) => setTheme(THEMES.find((t) => t === v) ?? 'auto')}>
            <Label>Light or dark</Label>
            <Radio value="auto">As the visitor's device is set</Radio>
            <Radio value="light">Always light</Radio>
            <Radio value="dark">Always dark</Radio>
          </RadioGroup>
          <TextField className="field" type="email" value={support} onChange={setSupport} maxLength={320}>
            <Label>Support address</Label>
            <Input placeholder="help@example.com" />
            <Text slot="description">Shown to people who need help signing in.</Text>
          </TextField>
        </div>
        <figure className={`branding-preview ${theme}`} aria-label="Preview of the branding">
          {shownLogo ? (
            <img src={shownLogo} alt={`Logo of ${shownName}`} className="branding-logo" />
          ) : (
            <p className="meta">No logo</p>
          )}
          <p className="branding-name">{shownName}</p>
          <p>
            <span className="swatch" style={shownColor ? { backgroundColor: shownColor } : undefined} aria-hidden="true" />{' '}
            {shownColor ? `Primary colour ${shownColor.toLowerCase()}` : 'Default colour'}
          </p>
          <figcaption className="meta">Theme: {theme === 'auto' ? "the visitor's setting" : theme}</figcaption>
        </figure>
      </div>
      <Button type="submit" className="button primary" isDisabled={update.isPending}>
        {update.isPending ? 'Saving…' : 'Save the branding'}
      </Button>
      <p role="status" className="status">
        {update.isSuccess ? 'Branding saved.' : ''}
      </p>
      <ErrorNotice error={update.error} title="The branding was not saved" />
    </Form>
  );
}

/** Deleting takes the application's name typed in full: everything it holds goes with it. */
function DeleteApplication({ id, name }: { id: string; name: string }) {
  const trpc = operator.useTRPC();
  const navigate = useNavigate();
  const [typed, setTyped] = useState('');
  const remove = useMutation(
    trpc.applications.delete.mutationOptions({
      onSuccess: async () => {
        forgetApplication(id);
        await refreshSession();
        await navigate({ to: '/apps' });
      },
    }),
  );
  return (
    <Form
      className="panel danger-zone"
      aria-labelledby="delete"
      onSubmit={(event) => {
        event.preventDefault();
        if (typed === name) remove.mutate({ id });
      }}
    >
      <h2 id="delete">Delete this application</h2>
      <p>Its users, organizations, keys, webhooks and events are deleted with it. This cannot be undone.</p>
      <TextField className="field" value={typed} onChange={setTyped} autoComplete="off">
        <Label>Type the application's name, {name}, to confirm</Label>
        <Input />
      </TextField>
      <Button type="submit" className="button danger" isDisabled={typed !== name || remove.isPending}>
        {remove.isPending ? 'Deleting…' : 'Delete the application'}
      </Button>
      <ErrorNotice error={remove.error} title="The application was not deleted" />
    </Form>
  );
}
