/**
 * Live announcements between processes on PostgreSQL: what one storage `announce`s, another on
 * the same schema hears on `announced`, with no timer between them; many ids announced at once
 * arrive in notifications under PostgreSQL's payload limit.
 */
import { Ids } from "@appexec/api"
import { ExecutionReports } from "@appexec/core"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Fiber, HashSet, Layer, Option, Stream } from "effect"
import * as TestDatabase from "./support/TestDatabase.js"

const database = TestDatabase.create("reports")
let schemas = 0

/** One process's storage on `schema` of the test database. */
const storage = (schema: string) => TestDatabase.storageOn(database, schema)

const executionId = (n: number) => Ids.ExecutionId.make(`00000000-0000-4000-8500-${n.toString(16).padStart(12, "0")}`)

/** The reports of two processes on one new schema. */
const twoProcesses = Effect.gen(function*() {
  const schema = `live${++schemas}`
  // One after the other: the second finds the schema migrated.
  const api = yield* Layer.build(storage(schema))
  const worker = yield* Layer.build(storage(schema))
  return {
    api: Context.get(api, ExecutionReports.ExecutionReports),
    worker: Context.get(worker, ExecutionReports.ExecutionReports)
  }
})

describe("PostgreSQL live announcements", () => {
  it.live("an execution one process announces reaches the other's announced stream", () =>
    Effect.gen(function*() {
      const { api, worker } = yield* twoProcesses
      const id = executionId(1)
      // The subscription is made as the fork first runs, before any notification can come back.
      const heard = yield* Effect.fork(Stream.runHead(Stream.filter(api.announced, (announced) => announced === id)))
      yield* Effect.yieldNow()
      yield* worker.announce(id)
      const received = yield* Fiber.join(heard).pipe(Effect.timeout("10 seconds"))
      expect(received).toEqual(Option.some(id))
    }).pipe(Effect.scoped))

  it.live("many ids announced at once all arrive, in notifications under the payload limit", () =>
    Effect.gen(function*() {
      const { api, worker } = yield* twoProcesses
      // 400 ids of 36 characters: more than one notification's 8000 bytes.
      const ids = Array.from({ length: 400 }, (_, i) => executionId(i + 1))
      const expected = HashSet.fromIterable(ids)
      const heard = yield* Effect.fork(
        api.announced.pipe(
          Stream.scan(HashSet.empty<Ids.ExecutionId>(), (seen, id) => HashSet.add(seen, id)),
          Stream.takeUntil((seen) => HashSet.isSubset(expected, seen)),
          Stream.runLast
        )
      )
      yield* Effect.yieldNow()
      for (const id of ids) yield* worker.announce(id)
      const seen = yield* Fiber.join(heard).pipe(Effect.timeout("10 seconds"))
      expect(Option.isSome(seen)).toBe(true)
    }).pipe(Effect.scoped))
})
