import type { RegExpEngine } from 'ajv/dist/types/index.js';
import { RE2JS } from 're2js';

/**
 * Ajv's `code.regExp` engine for schema `pattern` and `patternProperties`: RE2 semantics (re2js, pure
 * JavaScript), matching in time linear in the input. Schemas come from operators (`RESOURCES`), values from
 * anyone who can send a message: with a backtracking engine, `^(a+)+$` and a 32-character value would run
 * for minutes, and no deadline timer can fire while a regex runs. Syntax that has no linear-time match
 * (lookaround, backreferences) throws here, at schema compile time, so such a schema fails to load.
 *
 * Differences from ECMAScript patterns worth knowing: `\s` is ASCII whitespace only; `\uXXXX` escapes and
 * named groups are translated. Ajv passes the `u` flag; RE2 always matches by code point.
 */
export const linearRegExp: RegExpEngine = Object.assign(
  (pattern: string, _flags: string) => RE2JS.compile(RE2JS.translateRegExp(pattern)),
  // Only read by Ajv's standalone code generation, which this project does not use.
  { code: 'require("re2js").RE2JS' },
);
