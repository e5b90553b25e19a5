import { buildCli } from '../build.ts';

export default async function setup() {
  await buildCli();
}
