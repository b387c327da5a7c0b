import { Ajv, type AnySchemaObject, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule, { type FormatsPlugin } from 'ajv-formats';
import { InvalidSchemaError, ValidationError, type ValidationIssue } from './errors.js';
import { linearRegExp } from './linear-regexp.js';

/** A JSON Schema (draft-07 subset Ajv 8 supports by default) for one resource's records. */
export type JsonSchema = AnySchemaObject;

// ajv-formats is CommonJS with `exports.default`; under NodeNext the default import is the module object.
const addFormats: FormatsPlugin =
  (addFormatsModule as unknown as { default?: FormatsPlugin }).default ??
  (addFormatsModule as unknown as FormatsPlugin);

function pointerToField(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
}

function issueOf(error: ErrorObject): ValidationIssue {
  const params = error.params as { missingProperty?: string; additionalProperty?: string };
  const child = params.missingProperty ?? params.additionalProperty;
  const base = pointerToField(error.instancePath);
  const field = child === undefined ? base : base === '' ? child : `${base}.${child}`;
  return { instancePath: error.instancePath, field, message: error.message ?? 'is invalid' };
}

let shared: Ajv | undefined;

/**
 * One Ajv per process: creating one costs tens of ms, and the ingestion Lambda opens a Database per tenant
 * (up to the tenant cache size) that all declare the same schema objects. Ajv caches compiled validators by
 * schema object, so every tenant after the first reuses them. The price: two different schemas may not
 * declare the same `$id`.
 */
function sharedAjv(): Ajv {
  if (shared === undefined) {
    // strictSchema stays on (an unknown keyword is a typo: `requird` would silently check nothing). The
    // other strict checks are style lints that refuse schemas users plausibly write and that validate as
    // written: `required` without `properties`, `properties` without `type: 'object'` (data is always an
    // object), tuple `items` without `minItems`.
    shared = new Ajv({
      strict: true,
      strictRequired: false,
      strictTypes: false,
      strictTuples: false,
      allErrors: false,
      code: { regExp: linearRegExp },
    });
    addFormats(shared);
  }
  return shared;
}

/**
 * The top-level keywords that judge each field of a record on its own (its value against its property
 * schema, or whether it may be there at all) and what their references need. Every other keyword
 * (`required`, `dependencies`, `if`, `allOf`, `maxProperties`, ...) judges the record as a whole.
 */
const FIELD_KEYWORDS = [
  '$schema',
  'type',
  'properties',
  'patternProperties',
  'additionalProperties',
  'propertyNames',
  'definitions',
  '$defs',
] as const;

/** `schema` reduced to `FIELD_KEYWORDS`: what partial data can be validated against. */
export function fieldsSchema(schema: JsonSchema): JsonSchema {
  const fields: JsonSchema = {};
  for (const keyword of FIELD_KEYWORDS) if (keyword in schema) fields[keyword] = schema[keyword];
  return fields;
}

/** One derived schema object per resource schema object, so Ajv's cache (by object) compiles it once. */
const fieldSchemas = new WeakMap<JsonSchema, JsonSchema>();

/**
 * Compiles resource schemas once (Ajv 8, strict schema mode, standard formats, linear-time patterns) and validates records against
 * them. Stops at the first violation: `allErrors` costs time and is a known amplification risk on
 * untrusted input.
 */
export class SchemaRegistry {
  readonly #ajv: Ajv;

  constructor() {
    this.#ajv = sharedAjv();
  }

  /** Compiles `schema` for `resource`; throws `InvalidSchemaError` when it does not compile. */
  compile(resource: string, schema: JsonSchema): (data: unknown) => void {
    return this.#compile(resource, schema);
  }

  /**
   * Compiles the part of `schema` that judges each field on its own (`fieldsSchema`), for partial data:
   * an update's fields can be checked when it arrives, before the record it merges into is known.
   */
  compileFields(resource: string, schema: JsonSchema): (data: unknown) => void {
    let fields = fieldSchemas.get(schema);
    if (fields === undefined) {
      fields = fieldsSchema(schema);
      fieldSchemas.set(schema, fields);
    }
    return this.#compile(resource, fields);
  }

  #compile(resource: string, schema: JsonSchema): (data: unknown) => void {
    let validate: ValidateFunction;
    try {
      validate = this.#ajv.compile(schema);
    } catch (err) {
      throw new InvalidSchemaError(resource, err instanceof Error ? err.message : String(err), {
        cause: err,
      });
    }
    if ((schema as { $async?: unknown }).$async === true) {
      throw new InvalidSchemaError(resource, '$async schemas are not supported');
    }
    return (data: unknown) => {
      if (validate(data)) return;
      throw new ValidationError(resource, (validate.errors ?? []).map(issueOf));
    };
  }
}
