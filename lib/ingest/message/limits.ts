/**
 * Limits of message contract v1.
 *
 * `data` is capped at 256,000 bytes (decimal KB) of compact JSON as sent (UTF-8, U+FFFE/U+FFFF as 6-byte
 * escapes) rather than 262,144: the envelope around
 * it (tenant, resource, id, key, ...) is at most ~600 bytes, so a message whose `data` passes always fits
 * the SQS message size limit of 256 KiB, and the producer never accepts a write SQS would refuse.
 */
export const MAX_DATA_BYTES = 256_000;
/** `data` itself is level 1; each nested object or array adds one level. */
export const MAX_DATA_DEPTH = 32;
/** Bodies above SQS's own maximum (1 MiB) are refused before `JSON.parse` spends time on them. */
export const MAX_BODY_BYTES = 1_048_576;
/** Keys that could reach an object's prototype when a record is merged or copied. */
export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);
export const MIN_PRIORITY = 0;
export const MAX_PRIORITY = 100;
/** Priority of a message that sets none: the middle, so producers can rank writes above and below it. */
export const DEFAULT_PRIORITY = 50;
/**
 * Idempotency keys: 1..128 printable ASCII characters (0x21..0x7e), the alphabet SQS accepts for FIFO
 * deduplication ids, so keys are safe in logs, message attributes and ids derived from them.
 */
export const KEY_PATTERN = /^[\x21-\x7e]{1,128}$/;

/** What one pass over a parsed JSON document found. */
export interface JsonScan {
  /** Path of the first refused key, e.g. `data.a.__proto__`. */
  readonly forbiddenKeyPath?: string;
  /** Path of the first number that is not finite (`1e400` parses to Infinity and would serialize as null). */
  readonly nonFinitePath?: string;
  /**
   * Integer-valued numbers beyond ±(2^53-1), each with the path of its first occurrence. Such a value may
   * come from an integer literal JSON.parse rounded (`9007199254740993`): `firstUnsafeIntegerLiteral` tells.
   */
  readonly largeIntegerPaths?: ReadonlyMap<number, string>;
}

interface Frame {
  readonly value: unknown;
  readonly parent: Frame | undefined;
  readonly key: string;
}

function pathOf(frame: Frame): string {
  const parts: string[] = [];
  // Stryker disable next-line OptionalChaining: `f` is never undefined; the loop stops at the root, whose parent is.
  for (let f: Frame | undefined = frame; f?.parent !== undefined; f = f.parent) parts.push(f.key);
  return parts.reverse().join('.');
}

/**
 * Walks a `JSON.parse` result iteratively (no recursion; depth is bounded earlier by `nestsDeeperThan`).
 * `JSON.parse` turns a `"__proto__"` member into an own property, which `Object.keys` reports: that is
 * what is detected here, before any code copies or merges the object.
 */
export function scanJson(root: unknown): JsonScan {
  let nonFinitePath: string | undefined;
  let largeIntegerPaths: Map<number, string> | undefined;
  // Stryker disable next-line StringLiteral: the root's key is never read; pathOf stops at the root.
  const stack: Frame[] = [{ value: root, parent: undefined, key: '' }];
  for (let frame = stack.pop(); frame !== undefined; frame = stack.pop()) {
    const { value } = frame;
    if (typeof value === 'number') {
      if (nonFinitePath === undefined && !Number.isFinite(value)) nonFinitePath = pathOf(frame);
      else if (Number.isInteger(value) && !Number.isSafeInteger(value)) {
        largeIntegerPaths ??= new Map();
        if (!largeIntegerPaths.has(value)) largeIntegerPaths.set(value, pathOf(frame));
      }
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    if (Array.isArray(value)) {
      // Stryker disable next-line ArithmeticOperator: indices past the end hold undefined, which the walk skips.
      for (let i = value.length - 1; i >= 0; i--) {
        stack.push({ value: value[i], parent: frame, key: String(i) });
      }
      continue;
    }
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record);
    const refused = keys.find((key) => FORBIDDEN_KEYS.has(key));
    if (refused !== undefined) {
      // One refused key condemns the whole message: stop here (a deterministic, not exhaustive, report).
      const forbiddenKeyPath = pathOf({ value: undefined, parent: frame, key: refused });
      return { forbiddenKeyPath, nonFinitePath, largeIntegerPaths };
    }
    // Stryker disable next-line ArithmeticOperator: keys past the end read `record[undefined]` again, after the real key's findings.
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i]!;
      stack.push({ value: record[key], parent: frame, key });
    }
  }
  return { nonFinitePath, largeIntegerPaths };
}

const isDigit = (c: number) => c >= 0x30 && c <= 0x39;

/**
 * The first integer literal (no fraction, no exponent) outside JSON strings in `text` whose value is not a
 * safe integer, e.g. `9007199254740993`, which `JSON.parse` silently turns into `9007199254740992`. Floats
 * (`1e300`, `1.5`) are rounded by design and not reported. Linear; run only when `scanJson` saw a large
 * integer-valued number, so ordinary bodies never pay for it.
 */
export function firstUnsafeIntegerLiteral(text: string): string | undefined {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = closingQuoteOf(text, i);
      continue;
    }
    if (c !== 0x2d && !isDigit(c)) continue;
    let end = i + 1;
    while (end < text.length && isDigit(text.charCodeAt(end))) end++;
    let isInteger = true;
    // A fraction or an exponent makes it a float, whose rounding is JSON's documented behaviour.
    while (end < text.length && '.eE+-'.includes(text[end]!)) {
      isInteger = false;
      end++;
      while (end < text.length && isDigit(text.charCodeAt(end))) end++;
    }
    const token = text.slice(i, end);
    if (isInteger && !Number.isSafeInteger(Number(token))) return token;
    i = end - 1;
  }
  return undefined;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Index of the quote closing the JSON string opened at `open` (`text.length` if it never closes). */
function closingQuoteOf(text: string, open: number): number {
  for (let i = open + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === BACKSLASH)
      i++; // skip the escaped character
    else if (c === QUOTE) return i;
  }
  return text.length;
}

/**
 * True when brackets outside JSON strings nest deeper than `maxLevels` in `text`. Runs before `JSON.parse`
 * because parsing half a million nested arrays costs about a second, against a few ms for this loop.
 */
export function nestsDeeperThan(text: string, maxLevels: number): boolean {
  let level = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = closingQuoteOf(text, i);
    } else if (c === 0x7b || c === 0x5b) {
      if (++level > maxLevels) return true;
    } else if (c === 0x7d || c === 0x5d) {
      level--;
    }
  }
  return false;
}
