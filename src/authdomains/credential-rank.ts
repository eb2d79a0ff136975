/** How `rankDefinition.position` places a credential (api-map §3). */
export const RANK_POSITIONS = ['Above', 'Below', 'Between', 'Mid', 'High', 'Low'] as const;
export type RankPosition = (typeof RANK_POSITIONS)[number];

/**
 * Ranks are int64 in the database but kept within what a JSON number holds exactly, so that a
 * client reading one can send it back as a `value`.
 */
export const MAX_RANK = BigInt(Number.MAX_SAFE_INTEGER);
export const MIN_RANK = -MAX_RANK;

/**
 * The space between neighbours after a renumbering: 24 moves into the same gap before the next
 * one, and room for 2^29 credentials per domain.
 */
export const RANK_GAP = 1n << 24n;

/**
 * A rank strictly between two neighbours (`null`: no neighbour on that side), as far from both as
 * it can be; null when there is none, and the domain must be renumbered first.
 */
export function rankBetween(better: bigint | null, worse: bigint | null): bigint | null {
  let rank: bigint;
  if (better === null && worse === null) rank = 0n;
  else if (better === null) rank = (worse as bigint) - RANK_GAP;
  else if (worse === null) rank = better + RANK_GAP;
  else rank = better + (worse - better) / 2n;
  const fits = (better === null || rank > better) && (worse === null || rank < worse);
  return fits && rank >= MIN_RANK && rank <= MAX_RANK ? rank : null;
}
