/**
 * What a benchmark module exports, and how figures are printed: one line `name: value unit`.
 */
import type { Effect } from "effect"
import { loadavg } from "node:os"

/** One measured figure. */
export interface Figure {
  readonly name: string
  readonly value: number
  readonly unit: string
}

/** A benchmark: a name and an effect that measures and reports its figures as they come. */
export interface Benchmark {
  readonly name: string
  readonly run: (report: (figure: Figure) => Effect.Effect<void>) => Effect.Effect<void, unknown>
}

/** The printed form of a figure. */
export const format = (figure: Figure): string =>
  `${figure.name}: ${Number.isInteger(figure.value) ? figure.value : figure.value.toFixed(2)} ${figure.unit}`

/**
 * Reports how busy the machine was at `when` (`<bench>.machine.load_average_1m.<when>`): every
 * figure of a benchmark moves with it.
 */
export const reportLoad = (report: (figure: Figure) => Effect.Effect<void>, bench: string, when: string) =>
  report({ name: `${bench}.machine.load_average_1m.${when}`, value: loadavg()[0]!, unit: "runnable" })
