import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';

/**
 * The process's Prometheus metrics (prom-client), one registry per `Services` so that several servers in one process
 * (tests) keep theirs apart. The HTTP host records requests; the mail worker and the rate limiter their outcomes.
 */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'gatehouse_' });
  return {
    registry,
    httpRequests: new Counter({
      name: 'gatehouse_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status',
      labelNames: ['method', 'route', 'status'] as const,
      registers: [registry],
    }),
    httpDuration: new Histogram({
      name: 'gatehouse_http_request_duration_seconds',
      help: 'Time to answer an HTTP request, by method, route pattern and status',
      labelNames: ['method', 'route', 'status'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    mail: new Counter({
      name: 'gatehouse_mail_messages_total',
      help: 'Mail the outbox handled: sent, retried (an attempt failed, another follows) or failed (for good)',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    rateLimited: new Counter({
      name: 'gatehouse_rate_limit_hits_total',
      help: 'Requests refused with 429 by a rate limit, by limit',
      labelNames: ['limit'] as const,
      registers: [registry],
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
