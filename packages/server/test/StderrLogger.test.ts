/**
 * The shape of the `appexec` command's log lines (docs/logging.md): in JSON one object a line with
 * a string `message`, a lower-case `level`, an ISO `time`, the fields flat, and `error`/`cause` for
 * a failure; in logfmt the same keys, each once.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, FiberId, FiberRefs, HashMap, List, type Logger, LogLevel, LogSpan, Schema } from "effect"
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

/** The storage port's error, as core declares it. */
class StorageError extends Schema.TaggedError<StorageError>()("StorageError", {
  operation: Schema.String,
  cause: Schema.Defect
}) {
  override get message() {
    return `Storage operation '${this.operation}' failed`
  }
}

/** An error as node-postgres makes it: PostgreSQL's text as the message, its SQLSTATE as `code`. */
const postgresError = () =>
  Object.assign(new Error("cannot execute UPDATE in a read-only transaction"), { code: "25006", severity: "ERROR" })

const cycle: Record<string, unknown> = { name: "loop" }
cycle["self"] = cycle

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
  ["an object annotation", { annotations: HashMap.make(["executions", { ids: [1, 2] }]) }],
  ["an object message", { message: { a: 1 } }],
  ["several messages", { message: ["a", 1, true] }],
  ["a composite fiber id", { fiberId: FiberId.combine(FiberId.make(1, 0), FiberId.make(2, 0)) }],
  ["annotations named like the line's keys", {
    annotations: HashMap.make(["message", "m"], ["level", "l"], ["time", "t"], ["error", "e"], ["cause", "c"])
  }],
  ["an error among the parts", {
    message: ["claim failed", new StorageError({ operation: "claim", cause: postgresError() })]
  }],
  ["a cycle, a bigint and undefined", {
    annotations: HashMap.make(["loop", cycle], ["big", 10n], ["none", undefined])
  }],
  ["a warning", { logLevel: LogLevel.Warning }]
]

const jsonOf = (overrides: Partial<Logger.Logger.Options<unknown>>): Record<string, unknown> => {
  const line = StderrLogger.formatter("json").log(options(overrides))
  expect(line).not.toContain("\n")
  return JSON.parse(line) as Record<string, unknown>
}

/** The keys of a logfmt line, in order (a quoted value may hold spaces and `=`). */
const logfmtKeys = (line: string): Array<string> =>
  [...line.matchAll(/(?:^| )([^\s=]+)=(?:"(?:[^"\\]|\\.)*"|[^\s"]*)/g)].map((m) => m[1]!)

describe("StderrLogger.formatter, json", () => {
  it.each(cases)("writes one object with a string message, level and time: %s", (_, overrides) => {
    const line = jsonOf(overrides)
    expect(Object.keys(line).slice(0, 3)).toEqual(["time", "level", "message"])
    expect(typeof line["message"]).toBe("string")
    expect(line["time"]).toBe("2027-01-15T08:00:00.123Z")
    expect(line["level"]).toBe(overrides.logLevel === LogLevel.Warning ? "warn" : "info")
    for (const key of ["annotations", "logLevel", "timestamp", "spans", "fiberId", "fiber"]) {
      expect(line).not.toHaveProperty(key)
    }
  })

  it("writes the fields flat, beside the message", () => {
    expect(jsonOf({})).toEqual({
      time: "2027-01-15T08:00:00.123Z",
      level: "info",
      message: "GET /v1/executions/6f1c2a1e 200 3ms",
      requestId: "0b7e4d2c-1a2b-4c3d-8e9f-101112131415",
      method: "GET",
      route: "/v1/executions/:executionId",
      status: 200,
      ms: 3,
      cached: true
    })
  })

  it("joins the text parts of a message with a space; other objects are its details", () => {
    expect(jsonOf({ message: ["a", 1, true] })["message"]).toBe("a 1 true")
    expect(jsonOf({ message: ["settings", { a: 1 }] })).toMatchObject({ message: "settings", details: { a: 1 } })
  })

  it("writes an annotation named like a key the line writes itself as field.<name>", () => {
    // No failure: `error` and `cause` are the annotations' (a failed execution's line has its `error`).
    expect(jsonOf(cases.find(([name]) => name.startsWith("annotations named"))![1])).toEqual({
      time: "2027-01-15T08:00:00.123Z",
      level: "info",
      message: "GET /v1/executions/6f1c2a1e 200 3ms",
      "field.message": "m",
      "field.level": "l",
      "field.time": "t",
      error: "e",
      cause: "c"
    })
    const failed = jsonOf({
      message: ["claim failed", { a: 1 }],
      cause: Cause.fail(new Error("boom")),
      annotations: HashMap.make(["error", "e"], ["cause", "c"], ["details", "d"])
    })
    expect(failed).toMatchObject({
      "field.error": "e",
      "field.cause": "c",
      "field.details": "d",
      details: { a: 1 },
      error: "boom"
    })
  })

  it("an error line has the failure's text, the driver's message included, and its cause", () => {
    const line = jsonOf({
      logLevel: LogLevel.Error,
      message: ["claim failed", new StorageError({ operation: "claim", cause: postgresError() })],
      annotations: HashMap.make(["executionId", "e1"])
    })
    expect(line).toMatchObject({ level: "error", message: "claim failed", executionId: "e1" })
    expect(line["error"]).toBe(
      "Storage operation 'claim' failed: cannot execute UPDATE in a read-only transaction (code 25006)"
    )
    expect(line["cause"]).toEqual(expect.stringContaining("StorageError: Storage operation 'claim' failed\n"))
    expect(line["cause"]).toEqual(
      expect.stringContaining("[cause]: Error: cannot execute UPDATE in a read-only transaction")
    )
  })

  it("a line with an Effect cause has its errors' text and the pretty cause", () => {
    const line = jsonOf({
      logLevel: LogLevel.Error,
      message: "request failed",
      cause: Cause.sequential(Cause.fail(new Error("first")), Cause.die(new TypeError("second")))
    })
    expect(line["error"]).toBe("first; second")
    expect(line["cause"]).toEqual(expect.stringMatching(/^Error: first\n[\s\S]*TypeError: second/))
    expect(jsonOf({ message: "stopped", cause: Cause.interrupt(FiberId.none) })["error"]).toBe("interrupted")
  })
})

describe("StderrLogger.formatter, logfmt", () => {
  it.each(cases)("writes time, level and message first, and each key once: %s", (_, overrides) => {
    const line = StderrLogger.formatter("logfmt").log(options(overrides))
    expect(line).not.toContain("\n")
    const keys = logfmtKeys(line)
    expect(keys.slice(0, 3)).toEqual(["time", "level", "message"])
    expect(new Set(keys).size).toBe(keys.length)
    expect(keys).not.toContain("fiber")
  })

  it("writes a request line as time, level, message and the fields", () => {
    const line = StderrLogger.formatter("logfmt").log(options({}))
    const head = "time=2027-01-15T08:00:00.123Z level=info message=\"GET /v1/executions/6f1c2a1e 200 3ms\" "
    expect(line.startsWith(head)).toBe(true)
    // The fields in the annotations' order, which is the map's.
    expect(line.slice(head.length).split(" ").sort()).toEqual([
      "cached=true",
      "method=GET",
      "ms=3",
      "requestId=0b7e4d2c-1a2b-4c3d-8e9f-101112131415",
      "route=/v1/executions/:executionId",
      "status=200"
    ])
  })

  it("an error line ends with error= and cause=, each quoted on one line", () => {
    const line = StderrLogger.formatter("logfmt").log(options({
      logLevel: LogLevel.Error,
      message: ["claim failed", new StorageError({ operation: "claim", cause: postgresError() })],
      annotations: HashMap.empty()
    }))
    expect(line).toMatch(
      /^time=\S+ level=error message="claim failed" error="Storage operation 'claim' failed: cannot execute UPDATE in a read-only transaction \(code 25006\)" cause="StorageError: /
    )
    expect(logfmtKeys(line)).toEqual(["time", "level", "message", "error", "cause"])
  })
})

describe("StderrLogger.formatter, text", () => {
  const local = new Date(1_800_000_000_123)
  const clock = [local.getHours(), local.getMinutes(), local.getSeconds()].map((n) => String(n).padStart(2, "0"))
    .join(":")

  it("writes the time of day, the level, the message and the fields as logfmt does", () => {
    const line = StderrLogger.formatter("text").log(
      options({ annotations: HashMap.make(["url", "http://127.0.0.1:8080"]) })
    )
    expect(line).toBe(`${clock} INFO  GET /v1/executions/6f1c2a1e 200 3ms url=http://127.0.0.1:8080`)
  })

  it("writes a failure's error on the line and its cause on the lines below, indented", () => {
    const line = StderrLogger.formatter("text").log(options({
      logLevel: LogLevel.Error,
      message: ["claim failed", new StorageError({ operation: "claim", cause: postgresError() })],
      annotations: HashMap.empty()
    }))
    const [first, ...rest] = line.split("\n")
    expect(first).toBe(
      `${clock} ERROR claim failed error="Storage operation 'claim' failed: cannot execute UPDATE in a read-only transaction (code 25006)"`
    )
    expect(rest[0]).toBe("    StorageError: Storage operation 'claim' failed")
    expect(rest.every((l) => l.startsWith("    "))).toBe(true)
  })
})

describe("StderrLogger.formatOf", () => {
  it("is APPEXEC_LOG_FORMAT when it names a format, else text on a terminal and logfmt elsewhere", () => {
    expect(StderrLogger.formatOf("json", true)).toBe("json")
    expect(StderrLogger.formatOf("logfmt", true)).toBe("logfmt")
    expect(StderrLogger.formatOf("text", false)).toBe("text")
    expect(StderrLogger.formatOf(undefined, true)).toBe("text")
    expect(StderrLogger.formatOf(undefined, false)).toBe("logfmt")
    expect(StderrLogger.formatOf("yaml", false)).toBe("logfmt")
  })
})
