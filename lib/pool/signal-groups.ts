/**
 * What `SignalGroups` links in and out. The fields belong to the groups (the owner only reads `group` to
 * know whether a member is still watched): they make joining and leaving O(1) with no allocation.
 */
export interface SignalMember<M extends SignalMember<M>> {
  /** The group the member is in, `undefined` when not watching (never joined, left, or already fired). */
  group: SignalGroup<M> | undefined;
  prevMember: M | undefined;
  nextMember: M | undefined;
}

/** The members waiting on one signal, in joining order, and the one listener that serves them all. */
export class SignalGroup<M extends SignalMember<M>> {
  head: M | undefined = undefined;
  tail: M | undefined = undefined;
  size = 0;
  constructor(
    readonly signal: AbortSignal,
    readonly listener: () => void,
  ) {}
}

/**
 * Members (a pool's tasks) grouped by the external `AbortSignal` they were enqueued with, with ONE 'abort'
 * listener per signal however many members share it. Node's EventTarget keeps listeners in a list, so
 * adding and removing one listener per task on an invocation's shared deadline signal costs O(n) per task
 * and O(n^2) per invocation; here joining and leaving are O(1) (a Map lookup and a linked-list splice).
 * When the signal aborts, `onAbort` is called for each member still in the group, in joining order. The
 * listener is removed as soon as the group is empty, so finished work leaves nothing on the signal.
 */
export class SignalGroups<M extends SignalMember<M>> {
  readonly #groups = new Map<AbortSignal, SignalGroup<M>>();
  readonly #onAbort: (member: M, signal: AbortSignal) => void;

  constructor(onAbort: (member: M, signal: AbortSignal) => void) {
    this.#onAbort = onAbort;
  }

  /** Signals being listened to (one listener each). */
  get signalCount(): number {
    return this.#groups.size;
  }

  /** Starts watching `signal` for `member` (which must not be watching already; `signal` not yet aborted). */
  join(signal: AbortSignal, member: M): void {
    let group = this.#groups.get(signal);
    if (group === undefined) {
      const created: SignalGroup<M> = new SignalGroup(signal, () => this.#fire(created));
      group = created;
      this.#groups.set(signal, group);
      signal.addEventListener('abort', group.listener, { once: true });
    }
    member.group = group;
    member.prevMember = group.tail;
    member.nextMember = undefined;
    if (group.tail === undefined) group.head = member;
    else group.tail.nextMember = member;
    group.tail = member;
    group.size += 1;
  }

  /** Stops watching for `member`; a no-op when it is not watching. */
  leave(member: M): void {
    const group = member.group;
    if (group === undefined) return;
    this.#unlink(group, member);
    if (group.size === 0) {
      this.#groups.delete(group.signal);
      group.signal.removeEventListener('abort', group.listener);
    }
  }

  #unlink(group: SignalGroup<M>, member: M): void {
    const { prevMember: prev, nextMember: next } = member;
    if (prev === undefined) group.head = next;
    else prev.nextMember = next;
    if (next === undefined) group.tail = prev;
    else next.prevMember = prev;
    member.group = undefined;
    member.prevMember = undefined;
    member.nextMember = undefined;
    group.size -= 1;
  }

  #fire(group: SignalGroup<M>): void {
    // The listener was registered `once`: it is already gone. Forget the group first, so members that
    // leave from inside `onAbort` (they settle) find nothing to unlink, and detach each before the call.
    this.#groups.delete(group.signal);
    for (let member = group.head; member !== undefined; member = group.head) {
      this.#unlink(group, member);
      this.#onAbort(member, group.signal);
    }
  }
}
