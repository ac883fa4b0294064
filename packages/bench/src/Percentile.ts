/**
 * Percentiles of measured times, as every benchmark computes them.
 */

/** The `p`th percentile (0–100) of `sorted` (ascending): the sample at `p`% of its length; NaN when empty. */
export const of = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
