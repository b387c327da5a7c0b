import { describe, expect, it } from 'vitest';
import { clampRate, nextRate, overloaded } from '../../../lib/semaphore/rate-law.js';

const CEILING = 3500;
const STEP = CEILING / 32; // INCREASE_SHARE of the ceiling
const FLOOR = CEILING / 64; // MIN_BUDGET_SHARE of the ceiling
const round = (accepted: number, throttled: number, starved = false) => ({ accepted, throttled, starved });

describe('nextRate: the fleet cap control law', () => {
  it('decreases in proportion to the share refused', () => {
    expect(nextRate(2000, round(75, 25), CEILING)).toBe(1500);
    expect(nextRate(2000, round(90, 10), CEILING)).toBe(1800);
  });

  it('decreases by at most half, however much was refused', () => {
    expect(nextRate(2000, round(10, 90), CEILING)).toBe(1000);
    expect(nextRate(2000, round(0, 50), CEILING)).toBe(1000);
  });

  it('treats one refusal as noise, whatever its share', () => {
    expect(nextRate(2000, round(0, 1), CEILING)).toBe(2000);
    expect(nextRate(2000, round(3, 1), CEILING)).toBe(2000);
    expect(overloaded(round(0, 1))).toBe(false);
    expect(overloaded(round(0, 2))).toBe(true);
  });

  it('holds at a 1 % share refused and cuts just above it', () => {
    expect(nextRate(2000, round(990, 10), CEILING)).toBe(2000);
    expect(overloaded(round(990, 10))).toBe(false);
    expect(overloaded(round(989, 11))).toBe(true);
    expect(nextRate(2000, round(989, 11), CEILING)).toBeCloseTo(2000 * (1 - 11 / 1000), 9);
  });

  it('increases by a share of the ceiling, only when starved and nothing was refused', () => {
    // A round that ran a second (the default): one step.
    expect(nextRate(2000, round(100, 0, true), CEILING)).toBe(2000 + STEP);
    // One stray refusal: at the limit already, neither cut nor raised.
    expect(nextRate(2000, round(100, 1, true), CEILING)).toBe(2000);
    // Not starved: a satisfied holder keeps the rate.
    expect(nextRate(2000, round(100, 0, false), CEILING)).toBe(2000);
    // Starved but two refusals (under the tolerated share): neither cut nor raised.
    expect(nextRate(2000, round(1000, 2, true), CEILING)).toBe(2000);
    // Starved and overloaded: cut.
    expect(nextRate(2000, round(50, 50, true), CEILING)).toBe(1000);
  });

  it('adds a step per second the round ran at the rate, at most one step', () => {
    expect(nextRate(2000, round(100, 0, true), CEILING, { roundMs: 50 })).toBeCloseTo(2000 + STEP / 20, 9);
    expect(nextRate(2000, round(100, 0, true), CEILING, { roundMs: 250 })).toBeCloseTo(2000 + STEP / 4, 9);
    expect(nextRate(2000, round(100, 0, true), CEILING, { roundMs: 60_000 })).toBe(2000 + STEP);
    // A round booked now (or on a clock behind) ran no time at the rate: it holds.
    expect(nextRate(2000, round(100, 0, true), CEILING, { roundMs: 0 })).toBe(2000);
    expect(nextRate(2000, round(100, 0, true), CEILING, { roundMs: -5 })).toBe(2000);
    // A decrease does not depend on how long the round ran.
    expect(nextRate(2000, round(50, 50, true), CEILING, { roundMs: 0 })).toBe(1000);
  });

  it('holds for PROBE_HOLD_MS after a decrease before it increases again', () => {
    expect(nextRate(2000, round(100, 0, true), CEILING, { sinceDecreaseMs: 9_999 })).toBe(2000);
    expect(nextRate(2000, round(100, 0, true), CEILING, { sinceDecreaseMs: 10_000 })).toBe(2000 + STEP);
    // A decrease is never held back.
    expect(nextRate(2000, round(50, 50, true), CEILING, { sinceDecreaseMs: 0 })).toBe(1000);
  });

  it('doubles a rate that has never been decreased (slow start): per second of its round, at most once', () => {
    const fresh = { limitFound: false };
    expect(nextRate(500, round(100, 0, true), CEILING, fresh)).toBe(1000);
    expect(nextRate(500, round(100, 0, true), CEILING, { ...fresh, roundMs: 500 })).toBeCloseTo(
      500 * Math.SQRT2,
      9,
    );
    expect(nextRate(500, round(100, 0, true), CEILING, { ...fresh, roundMs: 60_000 })).toBe(1000);
    // Steps compound: two half-second rounds double it, as one whole second does.
    const half = { ...fresh, roundMs: 500 };
    expect(
      nextRate(nextRate(500, round(100, 0, true), CEILING, half), round(100, 0, true), CEILING, half),
    ).toBeCloseTo(1000, 9);
    // Only starved clean rounds grow it, and never past the ceiling; an overload cuts it as any other.
    expect(nextRate(500, round(100, 0, false), CEILING, fresh)).toBe(500);
    expect(nextRate(500, round(100, 1, true), CEILING, fresh)).toBe(500);
    expect(nextRate(3000, round(100, 0, true), CEILING, fresh)).toBe(CEILING);
    expect(nextRate(500, round(50, 50, true), CEILING, fresh)).toBe(250);
    // A step below the additive one never slows a small rate's climb.
    expect(nextRate(FLOOR, round(100, 0, true), CEILING, { ...fresh, roundMs: 50 })).toBeCloseTo(
      FLOOR + STEP / 20,
      9,
    );
    // Once a decrease has found the limit, it climbs additively.
    expect(nextRate(500, round(100, 0, true), CEILING, { limitFound: true })).toBe(500 + STEP);
  });

  it('keeps every rate within [ceiling / 64, ceiling]', () => {
    expect(nextRate(CEILING, round(100, 0, true), CEILING)).toBe(CEILING);
    expect(nextRate(CEILING - 1, round(100, 0, true), CEILING)).toBe(CEILING);
    expect(nextRate(FLOOR, round(0, 100), CEILING)).toBe(FLOOR);
    expect(nextRate(FLOOR * 1.5, round(0, 100), CEILING)).toBe(FLOOR);
    expect(nextRate(2 * CEILING, round(100, 0), CEILING)).toBe(CEILING);
    expect(clampRate(0, CEILING)).toBe(FLOOR);
    expect(clampRate(1000, CEILING)).toBe(1000);
  });
});
