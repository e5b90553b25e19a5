import { CORE_GROUP, CORE_USER, ENTERPRISE_USER } from './scim.filter.ts';

const LIST = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';

/** Paging limits: a list answers at most this many resources per page. */
export const MAX_COUNT = 1000;

/** `GET /ServiceProviderConfig` (RFC 7643 §5). */
export const serviceProviderConfig = (base: string) => ({
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
  documentationUri: 'https://github.com/gatehouse/gatehouse/blob/main/docs/scim.md',
  patch: { supported: true },
  bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
  filter: { supported: true, maxResults: MAX_COUNT },
  changePassword: { supported: false },
  sort: { supported: false },
  etag: { supported: false },
  authenticationSchemes: [
    {
      type: 'oauthbearertoken',
      name: 'OAuth Bearer Token',
      description: "Authentication with the directory's bearer token (scim_…)",
      primary: true,
    },
  ],
  meta: { resourceType: 'ServiceProviderConfig', location: `${base}/ServiceProviderConfig` },
});

const resourceTypes = (base: string) => [
  {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
    id: 'User',
    name: 'User',
    endpoint: '/Users',
    description: 'User Account',
    schema: CORE_USER,
    schemaExtensions: [{ schema: ENTERPRISE_USER, required: false }],
    meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/User` },
  },
  {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
    id: 'Group',
    name: 'Group',
    endpoint: '/Groups',
    description: 'Group',
    schema: CORE_GROUP,
    meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/Group` },
  },
];

type Attr = Record<string, unknown>;
const attr = (name: string, type: string, extra: Attr = {}): Attr => ({
  name,
  type,
  multiValued: false,
  required: false,
  caseExact: false,
  mutability: 'readWrite',
  returned: 'default',
  uniqueness: 'none',
  ...extra,
});
const multi = (name: string, subs: Attr[]): Attr => attr(name, 'complex', { multiValued: true, subAttributes: subs });
const typedValue = (types: string[]) => [
  attr('value', 'string'),
  attr('display', 'string'),
  attr('type', 'string', { canonicalValues: types }),
  attr('primary', 'boolean'),
];

const schemas = (base: string) => [
  {
    id: CORE_USER,
    name: 'User',
    description: 'User Account',
    attributes: [
      attr('userName', 'string', { required: true, uniqueness: 'server' }),
      attr('name', 'complex', {
        subAttributes: ['formatted', 'familyName', 'givenName', 'middleName', 'honorificPrefix', 'honorificSuffix'].map((n) =>
          attr(n, 'string'),
        ),
      }),
      ...['displayName', 'nickName', 'title', 'userType', 'preferredLanguage', 'locale', 'timezone'].map((n) =>
        attr(n, 'string'),
      ),
      attr('profileUrl', 'reference', { referenceTypes: ['external'] }),
      attr('active', 'boolean'),
      attr('password', 'string', { mutability: 'writeOnly', returned: 'never' }),
      multi('emails', typedValue(['work', 'home', 'other'])),
      multi('phoneNumbers', typedValue(['work', 'home', 'mobile', 'fax', 'pager', 'other'])),
      multi('addresses', [
        ...['formatted', 'streetAddress', 'locality', 'region', 'postalCode', 'country', 'type'].map((n) => attr(n, 'string')),
        attr('primary', 'boolean'),
      ]),
      multi('groups', [
        attr('value', 'string', { mutability: 'readOnly' }),
        attr('$ref', 'reference', { mutability: 'readOnly', referenceTypes: ['Group'] }),
        attr('display', 'string', { mutability: 'readOnly' }),
      ]),
      multi('roles', typedValue([])),
    ],
    meta: { resourceType: 'Schema', location: `${base}/Schemas/${CORE_USER}` },
  },
  {
    id: ENTERPRISE_USER,
    name: 'EnterpriseUser',
    description: 'Enterprise User',
    attributes: [
      ...['employeeNumber', 'costCenter', 'organization', 'division', 'department'].map((n) => attr(n, 'string')),
      attr('manager', 'complex', {
        subAttributes: [
          attr('value', 'string'),
          attr('$ref', 'reference'),
          attr('displayName', 'string', { mutability: 'readOnly' }),
        ],
      }),
    ],
    meta: { resourceType: 'Schema', location: `${base}/Schemas/${ENTERPRISE_USER}` },
  },
  {
    id: CORE_GROUP,
    name: 'Group',
    description: 'Group',
    attributes: [
      attr('displayName', 'string', { required: true }),
      multi('members', [
        attr('value', 'string', { mutability: 'immutable' }),
        attr('$ref', 'reference', { mutability: 'immutable', referenceTypes: ['User'] }),
        attr('display', 'string', { mutability: 'readOnly' }),
      ]),
    ],
    meta: { resourceType: 'Schema', location: `${base}/Schemas/${CORE_GROUP}` },
  },
];

export const listResponse = (resources: unknown[], total: number, startIndex: number) => ({
  schemas: [LIST],
  totalResults: total,
  startIndex,
  itemsPerPage: resources.length,
  Resources: resources,
});

/** `GET /ResourceTypes[/{id}]` and `GET /Schemas[/{id}]`: null for an unknown id (404). */
export function discovery(base: string, kind: 'ResourceTypes' | 'Schemas', id: string | undefined) {
  const all: Array<{ id: string }> = kind === 'ResourceTypes' ? resourceTypes(base) : schemas(base);
  if (id === undefined) return listResponse(all, all.length, 1);
  return all.find((r) => r.id === id) ?? null;
}
