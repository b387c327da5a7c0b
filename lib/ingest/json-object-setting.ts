import { ConfigError } from './errors.js';

/**
 * Parses a setting whose value is a JSON object (`RESOURCES`, `RESOURCE_SHARDS`): throws `ConfigError` naming
 * `key` when the text is not JSON or not an object; `shape` says what the object maps, for the message.
 * @example parseJsonObjectSetting('RESOURCE_SHARDS', '{"events":16}', 'resource name -> shard count')
 */
export function parseJsonObjectSetting(key: string, text: string, shape: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (cause) {
    throw new ConfigError(key, `not JSON (${(cause as Error).message})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError(key, `expected a JSON object: ${shape}`);
  }
  return parsed as Record<string, unknown>;
}
