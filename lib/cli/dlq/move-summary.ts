import type { SkipReason } from './letter-copy.js';

/** How the summary line names each reason a letter was left. */
const LEFT_BECAUSE: Record<SkipReason, string> = {
  'contract-rejection': 'contract rejection(s) left (--include-rejected moves them)',
  truncated: 'truncated message(s) left (export them)',
  'unknown-source': 'from an unknown source queue left',
  'other-source': 'from another queue than --to left',
  'unknown-origin-time': "without their origin's send time left",
  'past-tombstone-horizon': 'older than the tombstone horizon left (--past-horizon moves them)',
  'too-many-attributes': 'with too many attributes for a copy left (export them)',
  'arrived-during-redrive': 'arrived since the redrive started, left',
  'moved-this-run': 'copies of a message this run already moved, left',
};

/** What a redrive or import did, message by message: printed at the end, as a line or as JSON. */
export class MoveSummary {
  moved = 0;
  /** Copies the destination did not take. */
  refused = 0;
  /** Letters received that the `--reason` filter did not select. */
  unselected = 0;
  readonly #skipped = new Map<SkipReason, number>();

  skip(reason: SkipReason): void {
    this.#skipped.set(reason, (this.#skipped.get(reason) ?? 0) + 1);
  }

  /** Everything that is still where it was: skipped, refused or not selected. */
  get left(): number {
    let skipped = 0;
    for (const n of this.#skipped.values()) skipped += n;
    return skipped + this.refused + this.unselected;
  }

  toJSON(): { moved: number; refused: number; skipped: Record<string, number>; left: number } {
    return {
      moved: this.moved,
      refused: this.refused,
      skipped: Object.fromEntries(this.#skipped),
      left: this.left,
    };
  }

  /** One line: what moved where, then why each other letter stayed, e.g. `moved 3 message(s) to URL; ...`. */
  line(verb: string, destination: string, refusedBy: string): string {
    const notes = [
      ...Object.entries(LEFT_BECAUSE).map(([reason, why]) => {
        const n = this.#skipped.get(reason as SkipReason);
        return n === undefined ? '' : `${n} ${why}`;
      }),
      this.refused > 0 ? `${this.refused} refused by ${refusedBy}` : '',
    ].filter(Boolean);
    return `${verb} ${this.moved} message(s) to ${destination}${notes.length > 0 ? `; ${notes.join('; ')}` : ''}; ${this.left} left\n`;
  }
}
