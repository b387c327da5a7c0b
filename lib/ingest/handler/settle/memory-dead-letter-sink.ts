import type { DeadLetter } from './dead-letter-queue.js';
import type { DeadLetterSink } from './dead-letter-sink.js';

/** Decides whether the in-process sink takes a letter (default: every one). */
export type LetterFilter = (letter: DeadLetter) => boolean;

/**
 * A dead-letter sink in process memory: every letter it takes is kept in `letters`, keyed by the source
 * message id. `accept` refuses chosen letters (the handler must then redeliver them), as a full or
 * unreachable DLQ would.
 */
export class MemoryDeadLetterSink implements DeadLetterSink {
  readonly letters = new Map<string, DeadLetter>();
  /** Every `send` call, with the letters it carried. */
  readonly sends: (readonly DeadLetter[])[] = [];
  accept: LetterFilter = () => true;

  async send(letters: readonly DeadLetter[]): Promise<ReadonlySet<string>> {
    this.sends.push(letters);
    const refused = new Set<string>();
    for (const letter of letters) {
      if (this.accept(letter)) this.letters.set(letter.messageId, letter);
      else refused.add(letter.messageId);
    }
    return refused;
  }
}
