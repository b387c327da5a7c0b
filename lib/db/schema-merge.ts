import { ValidationError } from './errors.js';
import { type RecordState, type RefusedFields, setField } from './sequenced-state.js';
import { compareStamps, type WriteStamp } from './write-stamp.js';

type Fields = Record<string, unknown>;

/**
 * A base (upsert, insert) was just applied to `state` under fields that newer updates set, and the merged
 * record fails the schema. The base itself is valid (its data was checked on arrival), so it stays; the
 * newer updates go on top of it one by one in stamp order, as they would have in seq order, each kept if
 * the record stays valid and refused (its fields dropped) if not. Mutates `state` and returns the updates
 * it refused, which are also kept in `state.refused` for every later delivery of the same base to report.
 * `validate` throws `ValidationError` for an invalid record; any other error is not a refusal and escapes.
 */
export function refuseInvalidNewerFields(
  state: RecordState,
  validate: (data: unknown) => void,
): readonly RefusedFields[] {
  const byStamp = new Map<string, { stamp: WriteStamp; data: Fields }>();
  const base: Fields = {};
  for (const field of Object.keys(state.values)) {
    const stamp = state.stamps.get(field);
    if (stamp === undefined) {
      setField(base, field, state.values[field]);
      continue;
    }
    const key = JSON.stringify([stamp.seq, stamp.tie]);
    const update = byStamp.get(key) ?? { stamp, data: {} };
    setField(update.data, field, state.values[field]);
    byStamp.set(key, update);
  }
  const updates = [...byStamp.values()].sort((a, b) => compareStamps(a.stamp, b.stamp));
  const stamps = new Map<string, WriteStamp>();
  const refused: RefusedFields[] = [];
  let values = base;
  for (const update of updates) {
    const merged = { ...values };
    for (const field of Object.keys(update.data)) setField(merged, field, update.data[field]);
    try {
      validate(merged);
    } catch (err) {
      if (!(err instanceof ValidationError)) throw err;
      refused.push({ ...update, issues: err.issues });
      continue;
    }
    values = merged;
    for (const field of Object.keys(update.data)) stamps.set(field, update.stamp);
  }
  state.values = values;
  state.stamps = stamps;
  state.refused = refused;
  return refused;
}
