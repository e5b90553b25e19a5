import type { AddressInfo } from 'node:net';
import PostalMime from 'postal-mime';
import { SMTPServer } from 'smtp-server';
import { WAIT_MS } from './limits.ts';

export interface ReceivedMail {
  to: string;
  subject: string;
  text: string;
  html: string;
}

/**
 * A real SMTP server (smtp-server from npm) that keeps what nodemailer sends it, parsed with postal-mime.
 * `refuse`: how many messages to refuse first with a temporary failure (451), as a busy server does.
 */
export async function startSmtpSink(options: { refuse?: number; port?: number } = {}) {
  const inbox: ReceivedMail[] = [];
  let refused = 0;
  const waiters: Array<() => void> = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, _session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        if (refused < (options.refuse ?? 0)) {
          refused++;
          return callback(Object.assign(new Error('Try again later'), { responseCode: 451 }));
        }
        PostalMime.parse(Buffer.concat(chunks))
          .then((mail) => {
            inbox.push({
              to: mail.to?.[0]?.address ?? '',
              subject: mail.subject ?? '',
              text: mail.text ?? '',
              html: mail.html ?? '',
            });
            for (const wake of waiters.splice(0)) wake();
            callback();
          })
          .catch(callback);
      });
    },
  });
  // A port that cannot be had (EADDRINUSE) fails the caller at once rather than as an uncaught error later.
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.server.address() as AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}`,
    inbox,
    /** How many messages were refused so far. */
    refused: () => refused,
    /** Waits for the next message to `to` (case-insensitive), up to `timeoutMs`. */
    async next(to: string, timeoutMs = WAIT_MS): Promise<ReceivedMail> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const index = inbox.findIndex((m) => m.to.toLowerCase() === to.toLowerCase());
        if (index >= 0) return inbox.splice(index, 1)[0]!;
        if (Date.now() > deadline) throw new Error(`no mail to ${to} within ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 200);
        });
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The sign-in link of a magic-link mail, from its HTML. */
export function linkIn(mail: ReceivedMail): URL {
  const match = /href="([^"]+)"/.exec(mail.html);
  if (!match) throw new Error(`no link in mail: ${mail.html}`);
  // Mustache escapes attribute values (`/` → `&#x2F;`, `=` → `&#x3D;`); a mail client decodes them the same way.
  const href = match[1]!
    .replace(/&#x([0-9a-f]+);/gi, (_m, hex: string) => String.fromCodePoint(Number.parseInt(hex, 16)))
    .replaceAll('&amp;', '&');
  return new URL(href);
}
