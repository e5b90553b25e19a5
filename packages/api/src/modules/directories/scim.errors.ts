/** RFC 7644 §3.12 `scimType` values this server answers. */
export type ScimType =
  | 'invalidFilter'
  | 'tooMany'
  | 'uniqueness'
  | 'mutability'
  | 'invalidSyntax'
  | 'invalidPath'
  | 'noTarget'
  | 'invalidValue'
  | 'invalidVers'
  | 'sensitive';

export const SCIM_ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

/** A SCIM error answer (RFC 7644 §3.12): its HTTP status, `scimType` where one applies, and a `detail`. */
export class ScimError extends Error {
  readonly status: number;
  readonly scimType: ScimType | undefined;

  constructor(status: number, detail: string, scimType?: ScimType) {
    super(detail);
    this.status = status;
    this.scimType = scimType;
  }

  /** The body as RFC 7644 writes it: `status` is a string. */
  body() {
    return {
      schemas: [SCIM_ERROR_SCHEMA],
      status: String(this.status),
      ...(this.scimType ? { scimType: this.scimType } : {}),
      detail: this.message,
    };
  }
}

export const scimNotFound = (what: 'User' | 'Group' | 'Resource') => new ScimError(404, `${what} not found`);
export const invalidValue = (detail: string) => new ScimError(400, detail, 'invalidValue');
export const invalidSyntax = (detail: string) => new ScimError(400, detail, 'invalidSyntax');
