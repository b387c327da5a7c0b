import { assertConcurrency } from './validation.js';

/** A pool's membership in a shared budget: part of `ExecutorPoolOptions`. */
export interface BudgetOptions {
  /**
   * A budget shared with other pools: a task starts only when this pool is under its own cap AND the budget
   * grants a slot. Every busy pool gets at least one slot; the rest go round-robin.
   * @default undefined (the pool's own `concurrency` is its only cap)
   * @example
   * const budget = new ConcurrencyBudget(100); // one invocation's total in flight
   * const acme = new ExecutorPool({ concurrency: 50, budget });
   * const globex = new ExecutorPool({ concurrency: 50, budget });
   */
  budget?: ConcurrencyBudget;
}

/** What a pool gives the budget: called when a slot is offered; returns whether it started work with it. */
export interface BudgetConsumer {
  onSlotGranted(): boolean;
}

type WaitList = { head: BudgetMember | undefined; tail: BudgetMember | undefined };

/**
 * One in-flight budget shared by several pools (the tenant pools of one Lambda invocation). A pool starts a
 * task only when it is under its own cap AND the budget grants a slot. When a slot frees, it goes first to
 * a waiting pool that holds no slot at all (so every busy pool gets at least one), otherwise round-robin to
 * the pools waiting longest. A pool re-joins the back of the line after each grant, so one tenant's
 * 1,000 queued tasks never delay another tenant's 5 by more than a slot's turn. All bookkeeping is O(1):
 * two intrusive linked lists of waiting pools.
 */
export class ConcurrencyBudget {
  #total: number;
  #inUse = 0;
  readonly #starving: WaitList = { head: undefined, tail: undefined };
  readonly #rotating: WaitList = { head: undefined, tail: undefined };

  constructor(total: number) {
    assertConcurrency(total, 'budget total');
    this.#total = total;
  }

  get total(): number {
    return this.#total;
  }

  get inUse(): number {
    return this.#inUse;
  }

  get available(): number {
    return Math.max(0, this.#total - this.#inUse);
  }

  /** Changes the total; growing offers the new slots to waiting pools at once, shrinking revokes nothing. */
  resize(total: number): void {
    assertConcurrency(total, 'budget total');
    this.#total = total;
    this.#dispatch();
  }

  /** @internal Registers a consumer (a pool does this itself when given `budget`). */
  join(consumer: BudgetConsumer): BudgetMember {
    return new BudgetMember(this, consumer);
  }

  /** @internal */
  tryTake(member: BudgetMember): boolean {
    if (this.#inUse >= this.#total) return false;
    this.#inUse += 1;
    member.held += 1;
    return true;
  }

  /** @internal */
  give(member: BudgetMember): void {
    if (member.held <= 0) throw new Error('ConcurrencyBudget: release without a held slot');
    member.held -= 1;
    this.#inUse -= 1;
    // A waiter that just lost its last slot moves to the front tier.
    if (member.held === 0 && member.list === this.#rotating) {
      this.#unlink(member);
      this.#append(this.#starving, member);
    }
    this.#dispatch();
  }

  /** @internal */
  wait(member: BudgetMember): void {
    if (member.list !== undefined) return;
    this.#append(member.held === 0 ? this.#starving : this.#rotating, member);
    this.#dispatch();
  }

  /** @internal */
  cancel(member: BudgetMember): void {
    if (member.list !== undefined) this.#unlink(member);
  }

  #dispatch(): void {
    while (this.#inUse < this.#total) {
      const member = this.#starving.head ?? this.#rotating.head;
      if (member === undefined) return;
      this.#unlink(member);
      this.#inUse += 1;
      member.held += 1;
      if (!member.consumer.onSlotGranted()) {
        member.held -= 1;
        this.#inUse -= 1;
      }
    }
  }

  #append(list: WaitList, member: BudgetMember): void {
    member.list = list;
    member.prev = list.tail;
    member.next = undefined;
    if (list.tail === undefined) list.head = member;
    else list.tail.next = member;
    list.tail = member;
  }

  #unlink(member: BudgetMember): void {
    const list = member.list!;
    if (member.prev === undefined) list.head = member.next;
    else member.prev.next = member.next;
    if (member.next === undefined) list.tail = member.prev;
    else member.next.prev = member.prev;
    member.list = undefined;
    member.prev = undefined;
    member.next = undefined;
  }
}

/** One pool's membership in a {@link ConcurrencyBudget}. */
export class BudgetMember {
  /** Slots this member holds now. */
  held = 0;
  /** @internal wait-list links */
  list: WaitList | undefined;
  /** @internal */
  prev: BudgetMember | undefined;
  /** @internal */
  next: BudgetMember | undefined;

  constructor(
    readonly budget: ConcurrencyBudget,
    readonly consumer: BudgetConsumer,
  ) {}

  get waiting(): boolean {
    return this.list !== undefined;
  }

  /** Takes a slot if one is free now. */
  tryAcquire(): boolean {
    return this.budget.tryTake(this);
  }

  /** Gets in line; `consumer.onSlotGranted()` is called when a slot is offered. Idempotent. */
  waitForSlot(): void {
    this.budget.wait(this);
  }

  cancelWait(): void {
    this.budget.cancel(this);
  }

  release(): void {
    this.budget.give(this);
  }
}
