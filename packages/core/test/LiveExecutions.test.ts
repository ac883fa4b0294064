/**
 * Live executions (docs/api.md#live-executions): nodes report progress and log lines, outputs are
 * visible as soon as they settle, and an execution's event stream shows all of it in id order,
 * ends after the terminal snapshot, and resumes after a given event without missing or repeating
 * a report. Virtual time throughout.
 */
import { Appexec, AppexecLayer, ExecutionReports, NodeType } from "@appexec/core"
import { MemoryStorage, SeededIds, TestApps, TestHarness, TestOutboundHttp } from "@appexec/testing"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Clock, Effect, Fiber, Layer, Schema, Stream, TestClock } from "effect"

const { defineNode } = NodeType

/** Fails at once. */
const failing = defineNode({
  type: "test.fail",
  description: "Fails.",
  role: "process",
  inputs: { min: 1, max: 1 },
  config: Schema.Struct({}),
  run: () => Effect.fail(new NodeType.NodeFailure({ message: "no luck" }))
})

/** Reports its progress every 100 ms for 10 s. */
const ticker = defineNode({
  type: "test.ticker",
  description: "Ticks.",
  role: "process",
  inputs: { min: 1, max: 1 },
  config: Schema.Struct({}),
  run: ({ progress, upstream }) =>
    Effect.as(
      Effect.forEach(
        Array.from({ length: 100 }, (_, i) => i + 1),
        (i) => Effect.zipRight(Effect.sleep("100 millis"), progress(i / 100, `tick ${i}`))
      ),
      upstream[0]!.value
    )
})

const tickerApp = {
  name: "Ticker",
  public: true,
  nodes: [
    { id: "prompt", type: "input.text", label: "Prompt", config: { name: "prompt", required: true } },
    { id: "tick", type: "test.ticker", label: "Tick", config: {} },
    { id: "out", type: "output.text", label: "Out", config: {} }
  ],
  edges: [{ source: "prompt", target: "tick" }, { source: "tick", target: "out" }]
}

const { branches, chatty } = TestApps

interface Event {
  readonly event: string
  readonly id: string
  readonly data: Record<string, unknown>
}

const collect = (stream: Stream.Stream<Appexec.LiveEvent, unknown>) =>
  Effect.map(
    Stream.runCollect(stream),
    (events) => Chunk.toArray(events).map((e): Event => ({ event: e.event, id: e.id, data: JSON.parse(e.data) }))
  )

const outputsOf = (e: Event) =>
  Object.fromEntries(
    (e.data.outputs as ReadonlyArray<{ id: string; status: string; value: string | null }>).map((o) => [o.id, o])
  )

const setup = Effect.gen(function*() {
  const appexec = yield* Appexec.Appexec
  const app = yield* appexec.apps.import(branches)
  const principal = yield* TestHarness.signIn()
  return { appexec, app, principal }
})

const harness = TestHarness.layer({ nodes: [chatty, failing] })

describe("live executions", () => {
  it.scoped("a stream shows the start, progress, the fast output while running, logs, then the end", () =>
    Effect.gen(function*() {
      const { app, appexec, principal } = yield* setup
      const started = yield* appexec.executions.start(principal, app.appId, { prompt: "hi" })
      const stream = yield* appexec.executions.events(principal, started.executionId)
      const fiber = yield* Effect.fork(collect(stream))
      yield* TestClock.adjust("1 second")
      // The fast output is visible to a poll while the execution still runs.
      const polled = JSON.parse(yield* appexec.executions.getJson(principal, started.executionId))
      expect(polled.status).toBe("running")
      expect(polled.outputs.map((o: { status: string }) => o.status)).toEqual(["completed", "pending"])
      expect(polled.outputs[0].value).toBe("hi!")
      yield* TestClock.adjust("10 seconds")
      const events = yield* Fiber.join(fiber)

      const ids = events.map((e) => Number(e.id))
      expect(ids.every((id, i) => Number.isSafeInteger(id) && (i === 0 || id > ids[i - 1]!))).toBe(true)
      expect(events[0]!.event).toBe("execution")
      const snapshots = events.filter((e) => e.event === "execution")
      const fastWhileRunning = snapshots.find((e) =>
        e.data.status === "running" && outputsOf(e).fast!.status === "completed" &&
        outputsOf(e).slow!.status === "pending"
      )
      expect(fastWhileRunning).toBeDefined()
      const progress = events.filter((e) => e.event === "progress")
      expect(progress.length).toBeGreaterThanOrEqual(3)
      expect(progress.every((e) => e.data.nodeId === "wait")).toBe(true)
      const fractions = progress.map((e) => e.data.fraction as number)
      expect(fractions).toEqual([...fractions].sort((a, b) => a - b))
      expect(fractions.at(-1)).toBe(1)
      const logs = events.filter((e) => e.event === "log")
      expect(logs.map((e) => [e.data.nodeId, e.data.level, e.data.message])).toEqual([
        ["talk", "info", "line 1"],
        ["talk", "warn", "line 2"],
        ["talk", "info", "line 3"]
      ])
      // The last event is the terminal snapshot, after every report, and the stream ended there.
      const last = events.at(-1)!
      expect(last.event).toBe("execution")
      expect(last.data.status).toBe("completed")
      expect(events.indexOf(fastWhileRunning!)).toBeLessThan(events.indexOf(progress.at(-1)!))
      // The terminal snapshot is exactly the poll answer.
      expect(last.data).toEqual(JSON.parse(yield* appexec.executions.getJson(principal, started.executionId)))
    }).pipe(Effect.provide(harness)))

  it.scoped("a stream resumed after any event misses no report and repeats nothing", () =>
    Effect.gen(function*() {
      const { app, appexec, principal } = yield* setup
      const started = yield* appexec.executions.start(principal, app.appId, { prompt: "hi" })
      const whole = yield* Effect.fork(collect(yield* appexec.executions.events(principal, started.executionId)))
      yield* TestClock.adjust("11 seconds")
      const events = yield* Fiber.join(whole)
      const logs = (list: ReadonlyArray<Event>) => list.filter((e) => e.event === "log")
      /** The newest progress per node, in id order: what the store keeps of a node's progress. */
      const newestProgress = (list: ReadonlyArray<Event>) => {
        const byNode = new Map<unknown, Event>()
        for (const e of list) if (e.event === "progress") byNode.set(e.data.nodeId, e)
        return [...byNode.values()]
      }
      for (let k = 0; k < events.length; k++) {
        const resumed = yield* collect(
          yield* appexec.executions.events(principal, started.executionId, { lastEventId: events[k]!.id })
        )
        const rest = events.slice(k + 1)
        // Every log line after the point, once; the progress and snapshots it missed as the newest.
        expect(logs(resumed)).toEqual(logs(rest))
        expect(resumed.filter((e) => e.event === "progress")).toEqual(newestProgress(rest))
        if (rest.length === 0) expect(resumed).toEqual([])
        else expect(resumed.at(-1)).toEqual(rest.at(-1))
        const ids = resumed.map((e) => Number(e.id))
        expect(ids.every((id, i) => id > Number(events[k]!.id) && (i === 0 || id > ids[i - 1]!))).toBe(true)
      }
      // An id that means nothing here starts afresh: the snapshot as it is now, and the end.
      const fresh = yield* collect(
        yield* appexec.executions.events(principal, started.executionId, { lastEventId: "99999999999999" })
      )
      expect(fresh.map((e) => [e.event, e.data.status])).toEqual([["execution", "completed"]])
    }).pipe(Effect.provide(harness)))

  it.scoped("an output that fails early is failed at once; the others still run; a cancel keeps what was produced", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const app = yield* appexec.apps.import({
        ...branches,
        name: "Half broken",
        nodes: branches.nodes.map((n) => n.id === "shout" ? { ...n, type: "test.fail", config: {} } : n)
      })
      const principal = yield* TestHarness.signIn()
      const first = yield* appexec.executions.start(principal, app.appId, { prompt: "hi" })
      yield* TestClock.adjust("1 second")
      const running = yield* appexec.executions.get(principal, first.executionId)
      expect(running.status).toBe("running")
      expect(running.outputs.map((o) => [o.id, o.status, o.type, o.error])).toEqual([
        ["fast", "failed", "text", "node \"Shout\" ('shout', test.fail) failed: no luck"],
        ["slow", "pending", "pending", null]
      ])
      yield* TestClock.adjust("10 seconds")
      const ended = yield* appexec.executions.get(principal, first.executionId)
      expect(ended.status).toBe("failed")
      expect(ended.errorMessage).toBe("node \"Shout\" ('shout', test.fail) failed: no luck")
      expect(ended.outputs.map((o) => [o.id, o.status, o.value])).toEqual([
        ["fast", "failed", null],
        ["slow", "completed", "hi"]
      ])

      // The fast output produced, then a cancel while the slow branch runs: the output keeps its value.
      const whole = yield* appexec.apps.import(branches)
      const second = yield* appexec.executions.start(principal, whole.appId, { prompt: "yo" })
      yield* TestClock.adjust("1 second")
      yield* appexec.executions.cancel(second.executionId, principal)
      yield* TestClock.adjust("1 second")
      const canceled = yield* appexec.executions.get(principal, second.executionId)
      expect(canceled.status).toBe("failed")
      expect(canceled.outputs.map((o) => [o.id, o.status, o.value])).toEqual([
        ["fast", "completed", "yo!"],
        ["slow", "failed", null]
      ])
    }).pipe(Effect.provide(harness)))

  it.scoped("another workspace's execution has no stream and no logs", () =>
    Effect.gen(function*() {
      const { app, appexec, principal } = yield* setup
      const started = yield* appexec.executions.start(principal, app.appId, { prompt: "hi" })
      const other = yield* TestHarness.signIn("other")
      const stream = yield* Effect.flip(appexec.executions.events(other, started.executionId))
      expect(stream._tag).toBe("ExecutionNotFound")
      const logs = yield* Effect.flip(appexec.executions.logs(other, started.executionId))
      expect(logs._tag).toBe("ExecutionNotFound")
      expect((yield* Effect.flip(appexec.executions.events(principal, "not-a-uuid")))._tag).toBe("ExecutionNotFound")
    }).pipe(Effect.provide(harness)))

  it.scoped("the log keeps the newest lines and says how many it dropped", () =>
    Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const app = yield* appexec.apps.import({
        ...branches,
        name: "Talkative",
        nodes: branches.nodes.map((n) => n.id === "talk" ? { ...n, config: { lines: 1100 } } : n)
      })
      const principal = yield* TestHarness.signIn()
      const started = yield* appexec.executions.start(principal, app.appId, { prompt: "hi" })
      yield* TestClock.adjust("11 seconds")
      const lines = yield* appexec.executions.logs(principal, started.executionId)
      expect(lines.length).toBe(ExecutionReports.LOG_LINES + 1)
      expect(lines[0]!.nodeId).toBe(null)
      expect(lines[0]!.level).toBe("warn")
      expect(lines[0]!.message).toMatch(/^100 earlier log line\(s\) dropped/)
      expect(lines[1]!.message).toBe("line 101")
      expect(lines.at(-1)!.message).toBe("line 1100")
    }).pipe(Effect.provide(harness)))

  it.scoped("reports are written at most once per report interval, progress coalesced", () => {
    /** When each write of reports was made (virtual ms), and how many reports it held. */
    const writes: Array<{ readonly at: number; readonly count: number }> = []
    const counted = Layer.effect(
      ExecutionReports.ExecutionReports,
      Effect.map(ExecutionReports.ExecutionReports, (reports) => ({
        ...reports,
        append: (executionId, list) =>
          Effect.zipRight(
            Effect.flatMap(Clock.currentTimeMillis, (at) => Effect.sync(() => writes.push({ at, count: list.length }))),
            reports.append(executionId, list)
          )
      }))
    )
    const instance = AppexecLayer.make({ nodes: [ticker], webhooks: false, config: { drainTimeout: 0 } }).pipe(
      Layer.provide(counted),
      Layer.provideMerge(MemoryStorage.layer),
      Layer.provideMerge(SeededIds.layer()),
      Layer.provideMerge(TestOutboundHttp.layer)
    )
    return Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const app = yield* appexec.apps.import(tickerApp)
      const principal = yield* TestHarness.signIn()
      const started = yield* appexec.executions.start(principal, app.appId, { prompt: "go" })
      yield* TestClock.adjust("11 seconds")
      expect((yield* appexec.executions.get(principal, started.executionId)).status).toBe("completed")
      // 100 reports over 10 s: at most one write per 250 ms, the first at once.
      expect(writes.length).toBeGreaterThan(10)
      expect(writes.length).toBeLessThanOrEqual(10_000 / 250 + 2)
      // (The last write is the one the execution's end makes at once, before its terminal save.)
      for (let i = 1; i < writes.length - 1; i++) {
        expect(writes[i]!.at - writes[i - 1]!.at).toBeGreaterThanOrEqual(250)
      }
      // Coalesced: each write holds the newest progress of the node only.
      expect(writes.every((w) => w.count === 1)).toBe(true)
      const stream = yield* appexec.executions.events(principal, started.executionId, { lastEventId: "1" })
      const replayed = (yield* collect(stream)).filter((e) => e.event === "progress")
      expect(replayed.map((e) => e.data.fraction)).toEqual([1])
    }).pipe(Effect.provide(instance))
  })

  it.scoped("200 streams of one execution share one read of its reports per change, and each gets every event", () => {
    /** The reads of reports after an event id (only the streams make them). */
    const reads = { after: 0 }
    const counted = Layer.effect(
      ExecutionReports.ExecutionReports,
      Effect.map(ExecutionReports.ExecutionReports, (reports) => ({
        ...reports,
        after: (executionId, afterId) =>
          Effect.zipRight(Effect.sync(() => void (reads.after += 1)), reports.after(executionId, afterId))
      }))
    )
    const instance = AppexecLayer.make({ nodes: [ticker], webhooks: false, config: { drainTimeout: 0 } }).pipe(
      Layer.provide(counted),
      Layer.provideMerge(MemoryStorage.layer),
      Layer.provideMerge(SeededIds.layer()),
      Layer.provideMerge(TestOutboundHttp.layer)
    )
    return Effect.gen(function*() {
      const appexec = yield* Appexec.Appexec
      const app = yield* appexec.apps.import(tickerApp)
      const principal = yield* TestHarness.signIn()
      const started = yield* appexec.executions.start(principal, app.appId, { prompt: "go" })
      const streams = yield* Effect.forEach(
        Array.from({ length: 200 }, (_, i) => i),
        () => Effect.flatMap(appexec.executions.events(principal, started.executionId), (s) => Effect.fork(collect(s)))
      )
      yield* TestClock.adjust("11 seconds")
      const received = yield* Effect.forEach(streams, Fiber.join)
      // Every stream saw the same events, progress to the end and the terminal snapshot.
      const first = received[0]!
      expect(first.filter((e) => e.event === "progress").length).toBeGreaterThan(10)
      expect(first.at(-1)!.data.status).toBe("completed")
      expect(received.every((events) => JSON.stringify(events) === JSON.stringify(first))).toBe(true)
      // One read per change for all 200 (one each would be 200 times the events).
      expect(reads.after).toBeGreaterThan(10)
      expect(reads.after).toBeLessThan(3 * first.length)
    }).pipe(Effect.provide(instance))
  })

  it.scoped("a queued execution's poll tells its place in its workspace's queue", () =>
    Effect.gen(function*() {
      const { app, appexec, principal } = yield* setup
      const ids: Array<string> = []
      for (let i = 0; i < 3; i++) {
        ids.push((yield* appexec.executions.start(principal, app.appId, { prompt: "x" })).executionId)
      }
      yield* TestClock.adjust("1 millis")
      const positions = yield* Effect.forEach(ids, (id) =>
        Effect.map(appexec.executions.get(principal, id), (e) => [e.status, e.queuePosition]))
      expect(positions).toEqual([["running", undefined], ["queued", 0], ["queued", 1]])
      // A running execution's JSON has no queue position.
      expect(JSON.parse(yield* appexec.executions.getJson(principal, ids[0]!)).queuePosition).toBeUndefined()
      expect(JSON.parse(yield* appexec.executions.getJson(principal, ids[2]!)).queuePosition).toBe(1)
    }).pipe(Effect.provide(TestHarness.layer({ nodes: [chatty], config: { maxRunningPerWorkspace: 1 } }))))
})
