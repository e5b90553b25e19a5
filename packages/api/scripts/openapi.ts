/**
 * Writes the OpenAPI document to a file, for `npm run lint` (redocly) and for generating clients:
 *   npm run openapi -- <file> [base URL]
 * (through npm, which runs the project's Node 24: Node 20 cannot run TypeScript). A relative file is taken from where
 * the command was typed. The base URL becomes `servers`; the running service uses GATEHOUSE_BASE_URL.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { buildOpenApiDocument } from '../src/openapi.ts';

const [argument, baseUrl = 'https://auth.your-company.dev'] = process.argv.slice(2);
if (!argument) throw new Error('usage: npm run openapi -- <file> [base URL]');
// npm runs the script at the repository root and names the directory it was typed in as INIT_CWD.
const file = resolve(process.env.INIT_CWD ?? process.cwd(), argument);
await mkdir(dirname(file), { recursive: true });
await writeFile(file, `${JSON.stringify(buildOpenApiDocument(baseUrl), null, 2)}\n`);
