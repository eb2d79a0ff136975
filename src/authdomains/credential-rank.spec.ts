import { describe, expect, it } from '@jest/globals';
import { MAX_RANK, MIN_RANK, RANK_GAP, rankBetween } from './credential-rank.js';

describe('rankBetween', () => {
  it('starts an empty domain at zero', () => {
    expect(rankBetween(null, null)).toBe(0n);
  });

  it('puts a first or a last credential one gap beyond its neighbour', () => {
    expect(rankBetween(null, 100n)).toBe(100n - RANK_GAP);
    expect(rankBetween(100n, null)).toBe(100n + RANK_GAP);
  });

  it('halves the gap between two neighbours', () => {
    expect(rankBetween(0n, 10n)).toBe(5n);
    expect(rankBetween(-10n, -4n)).toBe(-7n);
    expect(rankBetween(-3n, 4n)).toBe(0n);
  });

  it('finds no room between adjacent ranks', () => {
    expect(rankBetween(4n, 5n)).toBeNull();
    expect(rankBetween(4n, 4n)).toBeNull();
  });

  it('finds no room beyond the ends of the range', () => {
    expect(rankBetween(MAX_RANK - 1n, null)).toBeNull();
    expect(rankBetween(null, MIN_RANK + 1n)).toBeNull();
  });

  it('runs out after about log2(gap) moves into the same place', () => {
    let worse = RANK_GAP;
    let moves = 0;
    for (let rank = rankBetween(0n, worse); rank !== null; rank = rankBetween(0n, worse)) {
      worse = rank;
      moves++;
    }
    expect(moves).toBe(24);
  });
});
