import { constantTimeEqual, type Services, sha256 } from '@gatehouse/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Gauge } from 'prom-client';

/** How the HTTP host names a request's route for metrics: a pattern (`/v1/users/{id}`), never a raw path with ids. */
export type RouteLabel = (request: FastifyRequest) => string;

/**
 * `GET /metrics` in Prometheus text format: requests and latency by route and status, the process's own metrics,
 * the mail outbox backlog, the database pool, mail outcomes and rate-limit refusals. With `token` set, a scrape needs
 * `Authorization: Bearer <token>`; without, it is open (put it behind the network, or set GATEHOUSE_METRICS_TOKEN).
 */
export function registerMetrics(app: FastifyInstance, services: Services, routeOf: RouteLabel, token: string | undefined) {
  const { metrics, orm } = services;
  const tokenHash = token ? sha256(token) : undefined;

  app.addHook('onResponse', async (request, reply) => {
    const labels = { method: request.method, route: routeOf(request), status: String(reply.statusCode) };
    metrics.httpRequests.inc(labels);
    metrics.httpDuration.observe(labels, reply.elapsedTime / 1000);
  });

  new Gauge({
    name: 'gatehouse_mail_outbox_queued',
    help: 'Messages waiting in the mail outbox (queued or waiting for a retry)',
    registers: [metrics.registry],
    async collect() {
      const [row] = await orm.em
        .fork()
        .getConnection()
        .execute<Array<{ n: string }>>(`select count(*) as n from messages where status = 'queued'`);
      this.set(Number(row?.n ?? 0));
    },
  });

  new Gauge({
    name: 'gatehouse_db_pool_connections',
    help: 'PostgreSQL pool connections by state (total, idle, waiting clients); absent with the embedded database',
    labelNames: ['state'] as const,
    registers: [metrics.registry],
    async collect() {
      const connection = orm.em.getConnection() as unknown as { getNativeClient?: () => Promise<unknown> };
      const native = (await connection.getNativeClient?.()) as
        | { totalCount?: number; idleCount?: number; waitingCount?: number }
        | undefined;
      if (native?.totalCount === undefined) return;
      this.set({ state: 'total' }, native.totalCount);
      this.set({ state: 'idle' }, native.idleCount ?? 0);
      this.set({ state: 'waiting' }, native.waitingCount ?? 0);
    },
  });

  app.get('/metrics', async (request, reply) => {
    if (tokenHash) {
      const presented = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
      if (!presented || !constantTimeEqual(sha256(presented), tokenHash)) {
        return reply.code(401).header('www-authenticate', 'Bearer').type('text/plain').send('metrics need the metrics token\n');
      }
    }
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
}
