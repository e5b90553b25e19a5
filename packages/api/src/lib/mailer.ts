import nodemailer, { type Transporter } from 'nodemailer';

export interface OutgoingMail {
  to: string;
  subject: string;
  html: string;
  text: string;
}

export interface Mailer {
  /** Resolves when the message is accepted by the SMTP server (or printed); rejects when delivery failed. */
  send(mail: OutgoingMail, options: { showLinks: boolean }): Promise<void>;
  close(): void;
}

const LINK = /https?:\/\/\S+/g;
export const redactLinks = (text: string): string => text.replace(LINK, '[link hidden]');

/** Real SMTP through nodemailer when `GATEHOUSE_SMTP_URL` is set; otherwise messages are printed to the console. */
export function createMailer(smtpUrl: string | undefined, from: string): Mailer {
  if (smtpUrl) {
    const transport: Transporter = nodemailer.createTransport(smtpUrl);
    return {
      send: async (mail) => {
        await transport.sendMail({ from, to: mail.to, subject: mail.subject, html: mail.html, text: mail.text });
      },
      close: () => transport.close(),
    };
  }
  return {
    // Links carry one-time tokens: printed only for development applications (CONTRACT §5: message log).
    send: async (mail, { showLinks }) => {
      const text = showLinks ? mail.text : redactLinks(mail.text);
      process.stdout.write(`\n--- mail to ${mail.to}: ${mail.subject}\n${text}\n---\n`);
    },
    close: () => undefined,
  };
}
