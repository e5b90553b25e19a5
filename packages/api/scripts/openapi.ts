/**
 * Writes the OpenAPI document to a file, for `npm run lint` (redocly) and for generating clients:
 *   node packages/api/scripts/openapi.ts <file> [base URL]
 * The base URL becomes `servers`; the running service uses GATEHOUSE_BASE_URL.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { buildOpenApiDocument } from '../src/index.ts';

const [file, baseUrl = 'https://auth.your-company.dev'] = process.argv.slice(2);
if (!file) throw new Error('usage: node packages/api/scripts/openapi.ts <file> [base URL]');
await mkdir(dirname(file), { recursive: true });
await writeFile(file, `${JSON.stringify(buildOpenApiDocument(baseUrl), null, 2)}\n`);
