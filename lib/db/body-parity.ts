/**
 * Whether an object holds a visible record, told from its size alone, so `count()` needs no body: a record
 * body is always an even number of bytes, a hidden one (tombstone, pending partial) an odd number. JSON
 * allows trailing whitespace, so one space at most makes the parity; a LIST page carries every size.
 * Objects written without this rule (by other writers) may be odd: `count()` reads the head of odd ones only.
 */
export function withParity(json: string, hidden: boolean): string {
  const odd = Buffer.byteLength(json, 'utf8') % 2 === 1;
  return odd === hidden ? json : `${json} `;
}

/** True when an object of `size` bytes certainly holds a visible record (even and not empty). */
export function isRecordSize(size: number): boolean {
  return size > 0 && size % 2 === 0;
}
