import { type AddressInfo, createServer } from 'node:net';

/** A port the OS just gave out as free (a random pick can collide with a client connection's ephemeral port). */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
