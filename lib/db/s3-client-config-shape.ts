// Why this file exists: the SDK copies its client's resolved config object into a fresh object on every call
// (`{ ...config, ...context }` in the schema serializer and deserializer middlewares, `{ ...config }` in the
// endpoint middleware). The resolved config of an S3 client has ~70 properties, and the way the SDK builds it
// (many `Object.assign`s onto one object) leaves V8 holding it as a hash table ("dictionary mode"), which
// makes each copy cost ~12-15 µs of CPU instead of ~2-3 µs: about 40 µs per S3 request in copies.

/** Reads of one property through a probe object whose prototype is the config (see `keepConfigCompact`). */
const PROBE_READS = 16;

/**
 * Makes V8 lay `config` out as a fixed-shape object again (fast properties) without changing anything a
 * program can observe: same object, same own properties, same values. V8 converts an object to fast
 * properties once it serves as the prototype of objects whose property reads it has seen a few times, so
 * `config` is made the prototype of a probe object read from `PROBE_READS` times (a function with its own
 * inline cache). The effect is only on speed: an engine that behaves otherwise leaves the config as it was
 * (`test/unit/db/s3-client-config-shape.test.ts` checks the layout on the Node version under test).
 * Call once, after the client is built and before its first call.
 */
export function keepConfigCompact(config: object): void {
  const probe = Object.create(config) as { readonly region?: unknown };
  for (let i = 0; i < PROBE_READS; i++) readRegion(probe);
}

function readRegion(probe: { readonly region?: unknown }): unknown {
  return probe.region;
}
