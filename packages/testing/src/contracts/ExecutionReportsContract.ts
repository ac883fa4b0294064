/**
 * Contract of `ExecutionReports`, and of the two `ExecutionStore` methods that go with it: reports
 * read back by id, one progress per node (the newest), one preview per execution (the newest),
 * a log bounded by lines and by bytes with
 * its drops counted, nothing of one execution seen through another, reports deleted with their
 * finished execution; a queued execution's position in its workspace's queue.
 */
import type { Ids } from "@appexec/api"
import { ExecutionReports, ExecutionStore } from "@appexec/core"
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import {
  claimSome,
  completed,
  completeWithWebhook,
  contract,
  LEASE,
  type Owner,
  ports,
  queued,
  seeded,
  seedOwner,
  started
} from "../internal/StorageFixtures.js"

const { LOG_BYTES, LOG_LINES, MESSAGE_LENGTH } = ExecutionReports
/** Progress report `id` of `nodeId`. */
const progress = (
  id: number,
  nodeId: string,
  fraction: number,
  message: string | null = null
): ExecutionReports.StoredReport => ({ id, report: { _tag: "Progress", at: 1_000 + id, nodeId, fraction, message } })

/** Log line `id` (of `nodeId`, null for appexec's own). */
const line = (id: number, message = `line ${id}`, nodeId: string | null = "node"): ExecutionReports.StoredReport => ({
  id,
  report: { _tag: "Log", at: 1_000 + id, nodeId, level: id % 3 === 0 ? "warn" : "info", message }
})

/** Log lines `from` to `to`, ids as numbered. */
const lines = (from: number, to: number, message?: (id: number) => string) =>
  Array.from({ length: to - from + 1 }, (_, i) => line(from + i, message?.(from + i)))

/** Preview report `id` of `nodeId`. */
const preview = (
  id: number,
  nodeId: string,
  mediaType: ExecutionReports.PreviewMediaType = "image/jpeg"
): ExecutionReports.StoredReport => ({
  id,
  report: {
    _tag: "Preview",
    at: 1_000 + id,
    nodeId,
    mediaType,
    url: `https://media.example.com/executions/x/preview-${id}.jpg?expires=1&signature=s`
  }
})

const ids = (reports: ReadonlyArray<ExecutionReports.StoredReport>) => reports.map((r) => r.id)

/** Inserts queued execution `n` of `owner` (storage may check that reports belong to an execution). */
const execution = (owner: Owner, n: number) =>
  Effect.gen(function*() {
    const record = queued(owner, n)
    yield* Effect.flatMap(ExecutionStore.ExecutionStore, (store) => store.insert(record))
    return record.executionId
  })

/** Runs the execution-reports contract against fresh storage from `makeStorage` for every test. */
export const suite = contract("ExecutionReports contract", (test) => {
  test(
    "reads back the reports above an id, by id, whatever the order of the appends",
    Effect.gen(function*() {
      const owner = yield* seedOwner()
      const reports = yield* ExecutionReports.ExecutionReports
      const id = yield* execution(owner, 1)
      expect(yield* reports.after(id, 0)).toEqual({ reports: [], droppedThrough: 0 })
      const first = [line(3), progress(1, "a", 0.25, "quarter"), line(2, "from appexec", null)]
      const second = [progress(5, "b", 1), line(4, "ünïcode ✓ \"quoted\", commas")]
      yield* reports.append(id, first)
      yield* reports.append(id, second)
      const all = [...first, ...second].sort((a, b) => a.id - b.id)
      expect(yield* reports.after(id, 0)).toEqual({ reports: all, droppedThrough: 0 })
      expect(yield* reports.after(id, 3)).toEqual({ reports: all.slice(3), droppedThrough: 0 })
      expect(yield* reports.after(id, 5)).toEqual({ reports: [], droppedThrough: 0 })
      // Event ids are large: versions count in billions.
      const late = ExecutionReports.eventId(7_000, 3, 12)
      yield* reports.append(id, [line(late)])
      expect(ids((yield* reports.after(id, 5)).reports)).toEqual([late])
    })
  )

  test(
    "keeps one progress per node, the newest; after returns it when its id is above the one asked",
    Effect.gen(function*() {
      const owner = yield* seedOwner()
      const reports = yield* ExecutionReports.ExecutionReports
      const id = yield* execution(owner, 1)
      yield* reports.append(id, [progress(1, "a", 0.1), progress(2, "b", 0.2), line(3)])
      yield* reports.append(id, [progress(4, "a", 0.4, "more"), progress(5, "a", 0.5, "half")])
      expect(yield* reports.after(id, 0)).toEqual({
        reports: [progress(2, "b", 0.2), line(3), progress(5, "a", 0.5, "half")],
        droppedThrough: 0
      })
      expect((yield* reports.after(id, 3)).reports).toEqual([progress(5, "a", 0.5, "half")])
      expect((yield* reports.after(id, 5)).reports).toEqual([])
      // Progress is not part of the log.
      expect(yield* reports.logs(id)).toEqual({ lines: [line(3)], dropped: 0 })
    })
  )

  test(
    "keeps one preview per execution, the newest whatever its node, beside the node's progress",
    Effect.gen(function*() {
      const owner = yield* seedOwner()
      const reports = yield* ExecutionReports.ExecutionReports
      const id = yield* execution(owner, 1)
      const other = yield* execution(owner, 2)
      yield* reports.append(id, [progress(1, "a", 0.1), preview(2, "a"), line(3)])
      yield* reports.append(other, [preview(1, "a")])
      expect((yield* reports.after(id, 0)).reports).toEqual([progress(1, "a", 0.1), preview(2, "a"), line(3)])
      // A newer preview of another node replaces it; of two in one append, the later is kept.
      yield* reports.append(id, [preview(4, "b", "image/png"), progress(5, "a", 0.5), preview(6, "b")])
      expect((yield* reports.after(id, 0)).reports).toEqual([line(3), progress(5, "a", 0.5), preview(6, "b")])
      yield* reports.append(id, [preview(7, "a", "image/png")])
      expect((yield* reports.after(id, 6)).reports).toEqual([preview(7, "a", "image/png")])
      expect((yield* reports.after(id, 0)).reports).toEqual([
        line(3),
        progress(5, "a", 0.5),
        preview(7, "a", "image/png")
      ])
      // Previews are not part of the log, nor seen through another execution.
      expect(yield* reports.logs(id)).toEqual({ lines: [line(3)], dropped: 0 })
      expect((yield* reports.after(other, 0)).reports).toEqual([preview(1, "a")])
    })
  )

  test(
    `keeps the newest ${LOG_LINES} log lines and counts the dropped ones`,
    Effect.gen(function*() {
      const owner = yield* seedOwner()
      const reports = yield* ExecutionReports.ExecutionReports
      const id = yield* execution(owner, 1)
      yield* reports.append(id, [progress(1, "a", 0.5)])
      yield* reports.append(id, lines(2, 1_101))
      const kept = yield* reports.logs(id)
      expect(kept.dropped).toBe(100)
      expect(ids(kept.lines)).toEqual(ids(lines(102, 1_101)))
      expect(kept.lines[0]).toEqual(line(102))
      const after = yield* reports.after(id, 0)
      expect(after.droppedThrough).toBe(101)
      // The progress stays, older than every kept line.
      expect(ids(after.reports)).toEqual([1, ...ids(lines(102, 1_101))])
      // Appends that fit within the bound one at a time drop as many as they add.
      for (let n = 1_102; n <= 1_111; n++) yield* reports.append(id, [line(n)])
      expect(yield* reports.logs(id)).toEqual({ lines: lines(112, 1_111), dropped: 110 })
      expect((yield* reports.after(id, 0)).droppedThrough).toBe(111)
    })
  )

  test(
    `keeps the newest lines within ${LOG_BYTES} of messages, counted in UTF-16 code units`,
    Effect.gen(function*() {
      const owner = yield* seedOwner()
      const reports = yield* ExecutionReports.ExecutionReports
      const id = yield* execution(owner, 1)
      const perLine = LOG_BYTES / MESSAGE_LENGTH
      // Two code units per character: 2,048 characters are MESSAGE_LENGTH units.
      const wide = (n: number) => String.fromCodePoint(0x1f600 + (n % 16)).repeat(MESSAGE_LENGTH / 2)
      yield* reports.append(id, lines(1, perLine, wide))
      expect(yield* reports.logs(id)).toEqual({ lines: lines(1, perLine, wide), dropped: 0 })
      yield* reports.append(id, lines(perLine + 1, perLine + 3, wide))
      expect(yield* reports.logs(id)).toEqual({ lines: lines(4, perLine + 3, wide), dropped: 3 })
      expect((yield* reports.after(id, 0)).droppedThrough).toBe(3)
      // Short lines fit in what one long line frees.
      const short = lines(perLine + 4, perLine + 5, () => "x".repeat(MESSAGE_LENGTH / 2 - 1))
      yield* reports.append(id, short)
      const kept = yield* reports.logs(id)
      expect(kept.dropped).toBe(4)
      expect(ids(kept.lines)).toEqual([...ids(lines(5, perLine + 3)), ...ids(short)])
    })
  )

  test(
    "logs answers the kept lines oldest first, whatever order they came in",
    Effect.gen(function*() {
      const owner = yield* seedOwner()
      const reports = yield* ExecutionReports.ExecutionReports
      const id = yield* execution(owner, 1)
      expect(yield* reports.logs(id)).toEqual({ lines: [], dropped: 0 })
      yield* reports.append(id, [line(5), progress(6, "a", 0.3), line(2, "first", null)])
      yield* reports.append(id, [line(9), line(7)])
      expect(yield* reports.logs(id)).toEqual({
        lines: [line(2, "first", null), line(5), line(7), line(9)],
        dropped: 0
      })
    })
  )

  test(
    "never answers one execution's reports or drops for another",
    Effect.gen(function*() {
      const one = yield* seedOwner(1)
      const two = yield* seedOwner(2)
      const reports = yield* ExecutionReports.ExecutionReports
      const first = yield* execution(one, 1)
      const second = yield* execution(two, 2)
      const third = yield* execution(one, 3)
      yield* reports.append(first, [progress(1, "a", 0.5), ...lines(2, LOG_LINES + 11)])
      yield* reports.append(second, [progress(1, "a", 0.9), line(2, "second's")])
      expect(yield* reports.after(second, 0)).toEqual({
        reports: [progress(1, "a", 0.9), line(2, "second's")],
        droppedThrough: 0
      })
      expect(yield* reports.logs(second)).toEqual({ lines: [line(2, "second's")], dropped: 0 })
      expect(yield* reports.after(third, 0)).toEqual({ reports: [], droppedThrough: 0 })
      expect(yield* reports.logs(third)).toEqual({ lines: [], dropped: 0 })
      const kept = yield* reports.logs(first)
      expect(kept.dropped).toBe(10)
      expect(kept.lines.length).toBe(LOG_LINES)
    })
  )

  test(
    "deleting a finished execution deletes its reports; an unfinished one keeps its own",
    Effect.gen(function*() {
      const { owner, store } = yield* seeded
      const reports = yield* ExecutionReports.ExecutionReports
      const finished = queued(owner, 1)
      yield* completeWithWebhook(finished, 1, 10)
      const open = yield* execution(owner, 2)
      yield* reports.append(finished.executionId, [
        progress(1, "a", 1),
        ...lines(2, LOG_LINES + 2),
        preview(LOG_LINES + 3, "a")
      ])
      yield* reports.append(open, [progress(1, "a", 0.5), line(2)])
      expect(yield* store.deleteFinished([finished.executionId, open])).toBe(1)
      expect(yield* reports.after(finished.executionId, 0)).toEqual({ reports: [], droppedThrough: 0 })
      expect(yield* reports.logs(finished.executionId)).toEqual({ lines: [], dropped: 0 })
      expect(yield* reports.after(open, 0)).toEqual({ reports: [progress(1, "a", 0.5), line(2)], droppedThrough: 0 })
    })
  )

  test(
    "a queued execution's position counts the queued executions of its workspace before it",
    Effect.gen(function*() {
      const a = yield* seedOwner(1)
      const b = yield* seedOwner(2)
      const { queue, store } = yield* ports
      const [a1, a2, a3] = [queued(a, 1), queued(a, 2), queued(a, 3)]
      const b1 = queued(b, 4)
      for (const record of [a1, a2, a3, b1]) yield* store.insert(record)
      const positions = (records: ReadonlyArray<{ readonly executionId: Ids.ExecutionId }>) =>
        Effect.forEach(records, (record) => store.queuePosition(record.executionId))
      expect(yield* positions([a1, a2, a3, b1])).toEqual([0, 1, 2, 0])
      // Workspaces in turn: one claim of two takes the oldest of each.
      const claims = yield* queue.claimBatch("w", LEASE, { limit: 2 })
      expect(claims.map((c) => c.execution.executionId).sort()).toEqual([a1.executionId, b1.executionId].sort())
      for (const claim of claims) yield* store.save(started(claim.execution, 5), claim.lease)
      expect(yield* positions([a1, a2, a3, b1])).toEqual([0, 0, 1, 0])
      const a1Claim = claims.find((c) => c.execution.executionId === a1.executionId)!
      yield* store.save(completed(started(a1Claim.execution, 5), 6), a1Claim.lease)
      expect(yield* positions([a1, a2, a3])).toEqual([0, 0, 1])
      // The next claim takes a2 (b has nothing queued); a3 is now first.
      const next = yield* claimSome("w", LEASE)
      expect(next.execution.executionId).toBe(a2.executionId)
      yield* store.save(started(next.execution, 7), next.lease)
      expect(yield* positions([a2, a3])).toEqual([0, 0])
      expect(yield* store.queuePosition(queued(a, 99).executionId)).toBe(0)
    })
  )
})
