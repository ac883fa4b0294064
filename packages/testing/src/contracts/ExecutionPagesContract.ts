/**
 * Contract of `ExecutionStore.page`: one workspace's executions, newest first by insertion, by
 * status and by app, keyset-paged on the insertion order with no empty last page; executions
 * inserted after a page was read neither shift nor repeat the pages after it.
 */
import { ExecutionStore } from "@appexec/core"
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { claimSome, completed, contract, LEASE, queued, seedOwner } from "../internal/StorageFixtures.js"

/** The ids of a page's executions, by their number in `queued`. */
const numbers = (page: ExecutionStore.Page) => page.executions.map((r) => Number.parseInt(r.executionId.slice(-12), 16))

/** Runs the paging contract against fresh storage from `makeStorage` for every test. */
export const suite = contract("ExecutionStore paging contract", (test) => {
  test(
    "pages a workspace's executions newest first, each page saying where the next starts, the last none",
    Effect.gen(function*() {
      const a = yield* seedOwner(1)
      const b = yield* seedOwner(2)
      const store = yield* ExecutionStore.ExecutionStore
      // Workspace a has 1, 3, 4, 6, 7; b has 2 and 5, in between.
      for (const n of [1, 2, 3, 4, 5, 6, 7]) yield* store.insert(queued(n === 2 || n === 5 ? b : a, n))
      const first = yield* store.page({ workspaceId: a.workspaceId, limit: 2 })
      expect(numbers(first)).toEqual([7, 6])
      expect(first.next).not.toBeNull()
      const second = yield* store.page({ workspaceId: a.workspaceId, limit: 2, before: first.next! })
      expect(numbers(second)).toEqual([4, 3])
      const third = yield* store.page({ workspaceId: a.workspaceId, limit: 2, before: second.next! })
      expect(numbers(third)).toEqual([1])
      expect(third.next).toBeNull()
      // A page that ends exactly at the last execution is the last: no empty page follows it.
      const whole = yield* store.page({ workspaceId: b.workspaceId, limit: 2 })
      expect(numbers(whole)).toEqual([5, 2])
      expect(whole.next).toBeNull()
      // The records are whole, as `get` reads them.
      expect(third.executions[0]).toEqual(queued(a, 1))
      // Nothing of another workspace, whatever the position.
      const none = yield* seedOwner(3)
      expect(yield* store.page({ workspaceId: none.workspaceId, limit: 5 })).toEqual({ executions: [], next: null })
    })
  )

  test(
    "filters by status and by app, alone and together, with paging",
    Effect.gen(function*() {
      const a = yield* seedOwner(1)
      const other = yield* seedOwner(2)
      const store = yield* ExecutionStore.ExecutionStore
      // Workspace a runs its own app (odd numbers) and the other workspace's (even numbers), as a public app.
      const ofOther = { ...a, appId: other.appId, workflowId: other.workflowId }
      for (const n of [1, 2, 3, 4, 5, 6]) yield* store.insert(queued(n % 2 === 0 ? ofOther : a, n))
      // Claims take the oldest first: 1, 2 and 3 complete.
      for (const _ of [1, 2, 3]) {
        const claim = yield* claimSome("w", LEASE)
        yield* store.save(completed(claim.execution, 10), claim.lease)
      }
      const page = (query: Omit<ExecutionStore.PageQuery, "workspaceId">) =>
        store.page({ workspaceId: a.workspaceId, ...query })

      expect(numbers(yield* page({ limit: 10, status: "completed" }))).toEqual([3, 2, 1])
      expect(numbers(yield* page({ limit: 10, status: "queued" }))).toEqual([6, 5, 4])
      expect(yield* page({ limit: 10, status: "failed" })).toEqual({ executions: [], next: null })
      expect(numbers(yield* page({ limit: 10, appId: a.appId }))).toEqual([5, 3, 1])
      expect(numbers(yield* page({ limit: 10, appId: other.appId }))).toEqual([6, 4, 2])
      expect(numbers(yield* page({ limit: 10, appId: other.appId, status: "completed" }))).toEqual([2])

      const first = yield* page({ limit: 1, appId: a.appId, status: "completed" })
      expect(numbers(first)).toEqual([3])
      expect(first.next).not.toBeNull()
      const last = yield* page({ limit: 1, appId: a.appId, status: "completed", before: first.next! })
      expect(numbers(last)).toEqual([1])
      expect(last.next).toBeNull()

      const byStatus = yield* page({ limit: 2, status: "completed" })
      expect(numbers(byStatus)).toEqual([3, 2])
      const rest = yield* page({ limit: 2, status: "completed", before: byStatus.next! })
      expect(numbers(rest)).toEqual([1])
      expect(rest.next).toBeNull()
    })
  )

  test(
    "executions inserted after a page was read come before it, never on the pages after it",
    Effect.gen(function*() {
      const a = yield* seedOwner(1)
      const store = yield* ExecutionStore.ExecutionStore
      for (const n of [1, 2, 3, 4]) yield* store.insert(queued(a, n))
      const first = yield* store.page({ workspaceId: a.workspaceId, limit: 2 })
      expect(numbers(first)).toEqual([4, 3])
      for (const n of [5, 6]) yield* store.insert(queued(a, n))
      const second = yield* store.page({ workspaceId: a.workspaceId, limit: 2, before: first.next! })
      expect(numbers(second)).toEqual([2, 1])
      expect(second.next).toBeNull()
      expect(numbers(yield* store.page({ workspaceId: a.workspaceId, limit: 3 }))).toEqual([6, 5, 4])
    })
  )
})
