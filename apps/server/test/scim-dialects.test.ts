import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { createDirectory, ERROR, scimOk } from './helpers/scim.ts';
import { ok, type TestApp } from './helpers/server.ts';
import { serverSuite } from './helpers/suite.ts';

/**
 * The request sequences Okta's and Microsoft Entra's SCIM documentation publish, replayed in order against a
 * directory of each provider (test/fixtures/scim/*.json name their sources): each step's status, the attributes its
 * answer must carry (and must not), and the organization membership it leaves.
 */
interface Step {
  doc: string;
  method: string;
  path: string;
  body?: unknown;
  status: number;
  capture?: Record<string, string>;
  expect?: Record<string, unknown>;
  absent?: string[];
  member?: Record<string, unknown> | null;
}

const suite = serverSuite({ smtp: false });
let app: TestApp;

beforeAll(async () => {
  app = await suite.server.createApp();
});

const load = (name: string): { source: string; steps: Step[] } =>
  JSON.parse(readFileSync(new URL(`./fixtures/scim/${name}.json`, import.meta.url), 'utf8'));

/** `{name}` placeholders replaced, everywhere in a JSON value. */
function fill<T>(value: T, vars: Record<string, string>): T {
  return JSON.parse(JSON.stringify(value).replace(/\{(\w+)\}/g, (match, name: string) => vars[name] ?? match));
}

for (const provider of ['okta', 'entra'] as const) {
  describe(`${provider}: the documented request sequence`, () => {
    it('replays every step with the documented answers', async () => {
      const { steps } = load(provider);
      const dir = await createDirectory(suite.server, app, { provider });
      const vars: Record<string, string> = { run: Date.now().toString(36) };
      for (const raw of steps) {
        const step = fill(raw, vars);
        const res = await dir.scim(step.method, step.path, step.body);
        const label = `${provider}: ${step.doc}`;
        expect(res.status, `${label} ${JSON.stringify(res.body)}`).toBe(step.status);
        if (step.status >= 400) {
          expect(res.body.schemas, label).toEqual([ERROR]);
          continue;
        }
        if (step.status === 204) {
          expect(res.body, label).toBeUndefined();
        } else {
          await scimOk(res, step.status);
          if (step.expect) expect(res.body, label).toMatchObject(step.expect);
          for (const name of step.absent ?? []) expect(res.body[name], `${label}: ${name}`).toBeUndefined();
        }
        for (const [name, attribute] of Object.entries(step.capture ?? {})) vars[name] = res.body[attribute];
        if (step.member !== undefined) {
          const { members } = await ok(app.rest('GET', `/v1/organizations/${dir.organizationId}/members?limit=100`));
          const member = members.find((m: any) => m.user_id === vars.user);
          if (step.member === null) expect(member, label).toBeUndefined();
          else expect(member, label).toMatchObject(step.member);
        }
      }
    });
  });
}
