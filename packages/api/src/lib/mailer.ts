import type { Transporter } from 'nodemailer';

export interface OutgoingMail {
  to: string;
  subject: string;
  html: string;
  text: string;
}

export interface Mailer {
  /**
   * Resolves when the message is accepted by the SMTP server (or printed); rejects when delivery failed.
   * `consoleText` is what the console transport prints instead of the text (links hidden for production).
   */
  send(mail: OutgoingMail, options: { consoleText: string }): Promise<void>;
  close(): void;
}

/** Real SMTP through nodemailer when `GATEHOUSE_SMTP_URL` is set; otherwise messages are printed to the console. */
export function createMailer(smtpUrl: string | undefined, from: string): Mailer {
  if (smtpUrl) {
    // nodemailer loads with the first message, not at start (the same transport, made once).
    let transport: Promise<Transporter> | undefined;
    return {
      send: async (mail) => {
        transport ??= import('nodemailer').then(({ default: nodemailer }) => nodemailer.createTransport(smtpUrl));
        const made = await transport;
        await made.sendMail({ from, to: mail.to, subject: mail.subject, html: mail.html, text: mail.text });
      },
      close: () => void transport?.then((made) => made.close()),
    };
  }
  return {
    // Links carry one-time tokens: the caller passes a copy without them for production applications.
    send: async (mail, { consoleText }) => {
      process.stdout.write(`\n--- mail to ${mail.to}: ${mail.subject}\n${consoleText}\n---\n`);
    },
    close: () => undefined,
  };
}
