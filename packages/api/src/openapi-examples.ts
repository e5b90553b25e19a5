type Json = Record<string, any>;

/** Sample values by string format: realistic, stable (the document is the same on every build), valid. */
const FORMATS: Record<string, string> = {
  uuid: '01937c4e-8a2b-7c3d-9e4f-5a6b7c8d9e0f',
  'date-time': '2026-11-24T09:30:00.000Z',
  date: '2026-11-24',
  email: 'ada@example.com',
  uri: 'https://app.example.com/welcome',
};

/** Sample values by property name, where a name says more than a type. */
const NAMED: Record<string, unknown> = {
  name: 'Acme',
  email: 'ada@example.com',
  primary_email: 'ada@example.com',
  slug: 'acme',
  role: 'admin',
  allowed_origins: ['https://app.example.com'],
  redirect_url: 'https://app.example.com/auth/callback',
  // Credentials are described, never imitated: an example must not look like a real one (secret scanners, copy-paste).
  secret: '<the secret key, shown once>',
  refresh_token: '<the refresh token>',
  access_token: 'eyJhbGciOiJFZERTQSIsImtpZCI6IjAxOTM3YyJ9.eyJzdWIiOiIwMTkzN2MifQ.c2lnbmF0dXJl',
  pending_token: '<the pending token>',
  token: '<the magic-link token>',
  code: '123456',
  search: 'acme',
  prefix: '<the first 12 characters of the key>',
  doc_type: 'terms',
  version: '2026-01',
  url: 'https://app.example.com/terms',
  description: 'Production backend',
  subject: 'Your sign-in link',
};

/**
 * An example value for a JSON Schema, built from the schema itself (its own `example`, `const`, first enum value,
 * format, bounds), so every request and response body of the document carries one that validates against it.
 */
export function exampleOf(schema: Json | undefined, components: Json, property?: string, depth = 0): unknown {
  if (!schema || depth > 12) return null;
  if (schema.$ref) return exampleOf(components[String(schema.$ref).split('/').pop() ?? ''], components, property, depth + 1);
  if ('example' in schema) return schema.example;
  if (Array.isArray(schema.examples) && schema.examples.length) return schema.examples[0];
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if ('default' in schema && schema.default !== undefined && typeof schema.default !== 'object') return schema.default;
  const options = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(options)) {
    // A nullable field shows its usual state in a fresh record: null (`revoked_at`, `merged_into`, `last_used_at`).
    if (options.some((o: Json) => o.type === 'null')) return null;
    return exampleOf(options[0], components, property, depth + 1);
  }
  if (Array.isArray(schema.allOf)) {
    return Object.assign({}, ...schema.allOf.map((s: Json) => exampleOf(s, components, property, depth + 1)));
  }
  if (Array.isArray(schema.type) && schema.type.includes('null')) return null;
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'object':
      return objectExample(schema, components, depth);
    case 'array': {
      if (property && Array.isArray(NAMED[property])) return NAMED[property];
      const item = exampleOf(schema.items, components, undefined, depth + 1);
      return Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => item);
    }
    case 'string':
      return stringExample(schema, property);
    case 'integer':
    case 'number':
      return schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : 1);
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return schema.properties ? objectExample(schema, components, depth) : {};
  }
}

function objectExample(schema: Json, components: Json, depth: number) {
  const out: Json = {};
  // the generated document is walked as plain JSON; its schemas are objects.
  for (const [key, value] of Object.entries((schema.properties ?? {}) as Json)) {
    out[key] = exampleOf(value, components, key, depth + 1);
  }
  return out;
}

function stringExample(schema: Json, property: string | undefined): string {
  const named = property ? NAMED[property] : undefined;
  const value =
    (schema.format && FORMATS[schema.format]) ??
    (typeof named === 'string' && (!schema.pattern || new RegExp(schema.pattern, 'u').test(named)) ? named : undefined) ??
    'example';
  const min = schema.minLength ?? 0;
  return value.length >= min ? value : value.padEnd(min, 'x');
}
