/**
 * The smallest tombstone horizon a stack accepts (`retention.tombstoneDays` must exceed `queueDays +
 * dlqDays`, at least 1 + 2): without `--tombstone-days`, nothing older is sent back.
 */
export const DEFAULT_TOMBSTONE_DAYS = 4;

export const TOMBSTONE_HELP = `  --tombstone-days N   the stack's retention.tombstoneDays (default ${DEFAULT_TOMBSTONE_DAYS}, the smallest a stack accepts;
                       cdk.json's defaults give 4 + 14 + 7 = 25): older letters are left, since
                       their write could resurrect a record whose tombstone has expired
  --past-horizon       send letters older than the tombstone horizon anyway`;

/** `--tombstone-days` and `--past-horizon`, or undefined when the number is not a positive integer. */
export function parseTombstoneOptions(
  days: string | undefined,
  pastHorizon: boolean,
): { tombstoneDays: number; pastHorizon: boolean } | undefined {
  const tombstoneDays = days === undefined ? DEFAULT_TOMBSTONE_DAYS : Number(days);
  return Number.isInteger(tombstoneDays) && tombstoneDays > 0 ? { tombstoneDays, pastHorizon } : undefined;
}
