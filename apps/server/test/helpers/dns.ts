import dns2 from 'dns2';

const { Packet } = dns2;

/** What the local DNS server answers for one name: its A and TXT records (a type not listed: no answer). */
export interface DnsRecords {
  a?: string[];
  txt?: string[];
}

export interface LocalDns {
  /** The zone it answers from, by lower-case name; a name not listed is NXDOMAIN. Tests may change it at any time. */
  zone: Record<string, DnsRecords>;
  /** `127.0.0.1:<port>`: what the server under test is given as its `dnsServers` (`GATEHOUSE_DNS_SERVERS`). */
  address: string;
  close(): Promise<void>;
}

/**
 * A real DNS server on a local UDP port (the `dns2` package), answering from `zone`: start the server under test with
 * its `address` as `dnsServers` and it resolves through it.
 */
export async function startLocalDns(zone: Record<string, DnsRecords> = {}): Promise<LocalDns> {
  const local = { zone } as LocalDns;
  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      const response = Packet.createResponseFromRequest(request);
      const [question] = request.questions;
      const records = question ? local.zone[question.name.toLowerCase()] : undefined;
      const answer = { name: question?.name, class: Packet.CLASS.IN, ttl: 1 };
      if (!records) response.header.rcode = Packet.RCODE.NXDOMAIN;
      else if (question!.type === Packet.TYPE.A)
        for (const address of records.a ?? []) response.answers.push({ ...answer, type: Packet.TYPE.A, address } as never);
      else if (question!.type === Packet.TYPE.TXT)
        for (const data of records.txt ?? []) response.answers.push({ ...answer, type: Packet.TYPE.TXT, data } as never);
      send(response);
    },
  });
  const listening = await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  local.address = `127.0.0.1:${listening.udp?.port}`;
  local.close = () => server.close();
  return local;
}
