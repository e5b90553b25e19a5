import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client';

let processRegistry: Registry | undefined;

/**
 * The process's own metrics (CPU, memory, event loop, GC), collected once per process however many servers it runs:
 * each collection starts an event-loop monitor and a GC observer that live as long as the process.
 */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry, prefix: 'gatehouse_' });
  }
  return processRegistry;
}

/**
 * The server's Prometheus metrics (prom-client): the process's, and a registry of its own per `Services` so that
 * several servers in one process (tests) keep theirs apart. The HTTP host records requests; the mail worker and the
 * rate limiter their outcomes.
 */
export function createMetrics() {
  const registry = Registry.merge([processMetrics(), new Registry()]);
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
