import { afterAll, beforeAll } from 'vitest';
import { startServer, type TestServer } from './server.ts';
import type { SmtpSink } from './sign-in.ts';
import { startSmtpSink } from './smtp.ts';

export interface ServerSuite {
  /** Started in `beforeAll`: read it inside tests and hooks, never at a file's top level. */
  readonly server: TestServer;
}

export interface MailServerSuite extends ServerSuite {
  /** The SMTP sink the server sends its mail to, started in `beforeAll` like the server. */
  readonly smtp: SmtpSink;
}

export interface ServerSuiteOptions {
  /** A real SMTP sink for the server's mail (default true); without one, the server sends none. */
  smtp?: boolean;
  /** Keeps the rate-limit counters in this Redis instead of the default store (PostgreSQL, or memory on PGlite). */
  redisUrl?: string;
}

/**
 * The server (and its SMTP sink) that the tests of a file, or of a describe block, share: started once in `beforeAll`
 * because a boot costs a database restore, closed in `afterAll`. Call it at the top level of that file or block.
 */
export function serverSuite(options: ServerSuiteOptions & { smtp: false }): ServerSuite;
export function serverSuite(options?: ServerSuiteOptions & { smtp?: true }): MailServerSuite;
export function serverSuite(options: ServerSuiteOptions = {}): MailServerSuite {
  let server: TestServer | undefined;
  let smtp: SmtpSink | undefined;
  beforeAll(async () => {
    if (options.smtp ?? true) smtp = await startSmtpSink();
    server = await startServer({ smtpUrl: smtp?.url, redisUrl: options.redisUrl });
  });
  afterAll(async () => {
    await server?.close();
    await smtp?.close();
  });
  return {
    get server() {
      if (!server) throw new Error('the suite server starts in beforeAll: use it inside tests and hooks');
      return server;
    },
    get smtp() {
      if (!smtp) throw new Error(options.smtp === false ? 'this suite has no SMTP sink' : 'the SMTP sink starts in beforeAll');
      return smtp;
    },
  };
}
