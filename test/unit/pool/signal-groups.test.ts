import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { type SignalGroup, SignalGroups, type SignalMember } from '../../../lib/pool/signal-groups.js';

class Member implements SignalMember<Member> {
  group: SignalGroup<Member> | undefined;
  prevMember: Member | undefined;
  nextMember: Member | undefined;
  constructor(readonly name: string) {}
}

const listeners = (signal: AbortSignal) => getEventListeners(signal, 'abort').length;

describe('SignalGroups (one listener per signal)', () => {
  it('listens once per signal and calls back every member still in, in joining order', () => {
    const fired: string[] = [];
    const groups = new SignalGroups<Member>((member, signal) =>
      fired.push(`${member.name}:${signal.reason}`),
    );
    const a = new AbortController();
    const b = new AbortController();
    const members = ['m1', 'm2', 'm3', 'm4'].map((name) => new Member(name));
    groups.join(a.signal, members[0]!);
    groups.join(a.signal, members[1]!);
    groups.join(b.signal, members[2]!);
    groups.join(a.signal, members[3]!);
    expect([listeners(a.signal), listeners(b.signal), groups.signalCount]).toEqual([1, 1, 2]);
    groups.leave(members[1]!);
    a.abort('stop');
    expect(fired).toEqual(['m1:stop', 'm4:stop']);
    expect(members.map((m) => m.group === undefined)).toEqual([true, true, false, true]);
    expect(groups.signalCount).toBe(1);
  });

  it('removes the listener when the last member leaves; leaving twice is a no-op', () => {
    const groups = new SignalGroups<Member>(() => {
      throw new Error('must not fire');
    });
    const controller = new AbortController();
    const members = Array.from({ length: 3 }, (_, i) => new Member(`m${i}`));
    for (const member of members) groups.join(controller.signal, member);
    for (const member of [members[1]!, members[0]!, members[2]!, members[2]!]) groups.leave(member);
    expect(listeners(controller.signal)).toBe(0);
    expect(groups.signalCount).toBe(0);
    controller.abort();
  });

  it('a member that leaves from inside the abort callback (it settles) does not disturb the others', () => {
    const fired: string[] = [];
    const members = Array.from({ length: 4 }, (_, i) => new Member(`m${i}`));
    const groups: SignalGroups<Member> = new SignalGroups<Member>((member) => {
      fired.push(member.name);
      groups.leave(member);
      if (member.name === 'm0') groups.leave(members[2]!); // a sibling settles as a side effect
    });
    const controller = new AbortController();
    for (const member of members) groups.join(controller.signal, member);
    controller.abort();
    expect(fired).toEqual(['m0', 'm1', 'm3']);
    expect(groups.signalCount).toBe(0);
  });
});
