import { eventPayloadSchemas } from '@gatehouse/api';
import { verifyWebhook } from '@gatehouse/sdk/webhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrg, createUser, uniqueEmail } from './helpers/fixtures.ts';
import { type Receiver, startReceiver } from './helpers/receiver.ts';
import { ok, rawRequest, startServer, type TestServer, until } from './helpers/server.ts';
import { type SmtpSink, signIn } from './helpers/sign-in.ts';
import { startSmtpSink } from './helpers/smtp.ts';

let server: TestServer;
let smtp: SmtpSink;
let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
  smtp = await startSmtpSink();
  server = await startServer({ smtpUrl: smtp.url, webhooks: { allowInsecure: true, retryScheduleS: [0.2, 0.2, 0.2] } });
});
afterAll(async () => {
  await server?.close();
  await smtp?.close();
  await receiver?.close();
});

/**
 * Throws unless `data` is exactly what its kind's declared schema allows: parsing drops undeclared fields and refuses
 * missing or mistyped ones, so the parsed value equals the data only when the payload matches its declaration.
 */
function expectDeclared(type: string, data: unknown) {
  const schema = eventPayloadSchemas[type];
  expect(schema, `no payload schema declared for ${type}`).toBeDefined();
  const parsed = schema!.safeParse(data);
  expect(parsed.error?.issues, `${type}: ${JSON.stringify(data)}`).toBeUndefined();
  expect(parsed.data, `${type} carries fields its schema does not declare`).toEqual(data);
}

describe('event payloads', () => {
  it('every kind the API lists is declared once, with a schema, and no other', async () => {
    const doc = (await rawRequest(server.url, 'GET', '/v1/openapi.json')).body;
    const type = doc.paths['/v1/events'].get.parameters.find((p: { name: string }) => p.name === 'type');
    expect(Object.keys(eventPayloadSchemas).sort()).toEqual([...type.schema.enum].sort());
  });

  it('the check refuses a payload that drifts from its declaration', async () => {
    const app = await server.createApp();
    const user = await createUser(app);
    expectDeclared('user.created', user);
    expect(() => expectDeclared('user.created', { ...user, nickname: 'extra' })).toThrow(/does not declare/);
    expect(() => expectDeclared('user.created', { ...user, email_verified: 'yes' })).toThrow();
    expect(() => expectDeclared('organization_membership.deleted', { user_id: user.id })).toThrow();
  });

  it('every event written and delivered through the API has the data its kind declares', async () => {
    const app = await server.createApp();
    const path = '/hooks/payloads';
    const endpoint = await ok(app.rest('POST', '/v1/webhooks', { url: `${receiver.url}${path}` }), 201);
    const user = await createUser(app);
    await ok(app.rest('PATCH', `/v1/users/${user.id}`, { profile: { plan: 'pro' } }));
    const org = await createOrg(app);
    await ok(app.rest('PATCH', `/v1/organizations/${org.id}`, { name: 'Renamed' }));
    await ok(app.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: user.id }), 201);
    await ok(app.rest('PATCH', `/v1/organizations/${org.id}/members/${user.id}`, { role: 'admin' }));
    await ok(app.rest('DELETE', `/v1/organizations/${org.id}/members/${user.id}`));
    await signIn(server, smtp, app, uniqueEmail('payloads'));
    await ok(app.rest('POST', '/v1/api-keys', { name: 'reader', scopes: ['users:read'] }), 201);
    await ok(app.rest('DELETE', `/v1/organizations/${org.id}`));
    await ok(app.rest('DELETE', `/v1/users/${user.id}`));

    const { events } = await ok(app.rest('GET', '/v1/events?limit=100'));
    const kinds = new Set(events.map((e: { type: string }) => e.type));
    for (const kind of [
      'api_key.created',
      'webhook_endpoint.created',
      'user.created',
      'user.updated',
      'user.deleted',
      'organization.created',
      'organization.updated',
      'organization.deleted',
      'organization_membership.created',
      'organization_membership.updated',
      'organization_membership.deleted',
      'session.created',
    ]) {
      expect(kinds, kind).toContain(kind);
    }
    for (const event of events) expectDeclared(event.type, event.data);

    // What the endpoint received (it subscribes to every kind): each delivery signed, with the logged event's data.
    const delivered = ['user.created', 'organization_membership.created', 'session.created', 'user.deleted'];
    const received = await until(
      async () => {
        const got = receiver.at(path);
        const types = new Set(got.map((d) => JSON.parse(d.body).type));
        return delivered.every((type) => types.has(type)) ? got : undefined;
      },
      `deliveries of ${delivered.join(', ')}`,
    );
    for (const delivery of received) {
      const event = verifyWebhook(delivery.body, delivery.headers, endpoint.secret);
      expectDeclared(event.type, event.data);
      const logged = events.find((e: { id: string }) => e.id === delivery.headers['webhook-id']);
      expect(event.data).toEqual(logged.data);
    }
  });
});
