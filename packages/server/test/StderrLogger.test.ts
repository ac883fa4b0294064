import { describe, expect, it } from "@effect/vitest"
import { Cause, FiberId, FiberRefs, HashMap, List, Logger, LogLevel, LogSpan } from "effect"
import * as StderrLogger from "../src/StderrLogger.js"

const options = (overrides: Partial<Logger.Logger.Options<unknown>>): Logger.Logger.Options<unknown> => ({
  fiberId: FiberId.make(42, 1_800_000_000_000),
  logLevel: LogLevel.Info,
  message: "GET /v1/executions/6f1c2a1e 200 3ms",
  cause: Cause.empty,
  context: FiberRefs.empty(),
  spans: List.empty(),
  annotations: HashMap.make(
    ["requestId", "0b7e4d2c-1a2b-4c3d-8e9f-101112131415"],
    ["method", "GET"],
    ["route", "/v1/executions/:executionId"],
    ["status", 200],
    ["ms", 3],
    ["cached", true]
  ),
  date: new Date(1_800_000_000_123),
  ...overrides
})

const cases: ReadonlyArray<readonly [string, Partial<Logger.Logger.Options<unknown>>]> = [
  ["a request line", {}],
  ["a message in an array", { message: ["worker started"] }],
  ["values to quote", {
    message: "a \"quoted\" message = with spaces\nand a line break",
    annotations: HashMap.make(["odd key=\"x\"", "va lue"], ["empty", ""], ["unicode", "ü ✓"])
  }],
  ["no annotations", { annotations: HashMap.empty() }],
  ["a cause", { cause: Cause.fail(new Error("boom")) }],
  ["a span", { spans: List.make(LogSpan.make("step", 1_800_000_000_000)) }],
  ["an object annotation", { annotations: HashMap.make(["error", { code: 1 }]) }],
  ["an object message", { message: { a: 1 } }],
  ["several messages", { message: ["a", 1] }],
  ["a composite fiber id", { fiberId: FiberId.combine(FiberId.make(1, 0), FiberId.make(2, 0)) }]
]

describe("StderrLogger.formatter", () => {
  for (const [format, effectLogger] of [["json", Logger.jsonLogger], ["logfmt", Logger.logfmtLogger]] as const) {
    it.each(cases)(`writes ${format} lines as Effect's own logger does: %s`, (_, overrides) => {
      const logged = options(overrides)
      expect(StderrLogger.formatter(format).log(logged)).toBe(effectLogger.log(logged))
    })
  }
})
