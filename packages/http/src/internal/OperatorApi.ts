/**
 * The JSON endpoints of the operator views (docs/operations.md#operator-views), for the admin
 * app only: its port is private, so they take no key and see every workspace. Times are ISO 8601
 * strings, as in the API.
 *
 * - `GET /operator`: what this admin app allows (`actions`), and with actions the anti-forgery
 *   token an action carries (`actionToken`, `ActionGuard`).
 * - `GET /operator/workspaces`: each workspace's queued and running executions (running: under a
 *   live lease; queued: unfinished under none, a run handed back included).
 * - `GET /operator/apps`: each app with queued or running executions: how many of each, its limit
 *   (`concurrency`), the node types of its current version, and what its queued ones wait for
 *   (`AppQueues`).
 * - `GET /operator/throughput`: executions finished per minute over the last hour, by status, and
 *   the hour's failure rate.
 * - `GET /operator/processes`: every process of the deployment (docs/operations.md#the-fleet): its
 *   name, process id, role, version, start and last heartbeat, whether it is live (a heartbeat
 *   within its lease), how many executions it runs now and the node types its worker runs (null
 *   without a worker); a process that stopped is gone, one
 *   that died shows `live: false` until its row is pruned.
 * - `GET /operator/backends`: the servers outside appexec this process runs work on (the ComfyUI
 *   servers, `BackendServers`): each one's kind, URL without credentials, state (`busy`, `idle`,
 *   `unreachable`, asked at this request), capacity and the executions it runs for this process
 *   now; none in a process without such servers.
 * - `GET /operator/executions/{executionId}`: one execution of any workspace, with the process
 *   running it (`worker`; null while none holds a live lease), which the API's answer never shows.
 * - `GET /operator/workers`: the processes holding leases, with their last heartbeat (their last
 *   lease renewal: the end of their newest lease minus its length).
 * - `GET /operator/deliveries?limit=N`: failed webhook deliveries across workspaces, newest first.
 * - `POST /operator/executions/{executionId}/webhook/redeliver`: one more attempt of a finished
 *   execution's webhook (202), only with `actions` and from the port's own page with its token
 *   (`ActionGuard`); 403 `forbidden` otherwise.
 */
import { ExecutionId } from "@appexec/api/Ids"
import {
  Appexec,
  AppexecConfig,
  AppQueues,
  type AppStore,
  BackendServers,
  type Errors,
  ExecutionStore,
  OperatorViews,
  ProcessIdentity,
  ProcessRegistry
} from "@appexec/core"
import { Clock, Effect, Option, Schema } from "effect"
import type * as ActionGuard from "./ActionGuard.js"
import * as ErrorAnswers from "./ErrorAnswers.js"
import { json, type ServerRequest, type ServerResponse } from "./Exchange.js"

/** The prefix of the endpoints. */
export const PREFIX = "/operator"

/** The width of a throughput bucket, and how many the window holds (an hour of minutes). */
const MINUTE = 60_000
const MINUTES = 60

/** Bounds of `GET /operator/deliveries?limit=`. */
export const DELIVERY_LIMIT = { default: 50, min: 1, max: 200 } as const

const isExecutionId = Schema.is(ExecutionId)

const noStore = { "cache-control": "no-store" }

const iso = (ms: number) => new Date(ms).toISOString()

/** What the endpoints may do. */
export interface Options {
  /** Allow the operator's actions (redelivery); refused with 403 when false. */
  readonly actions: boolean
  /** What an action must carry (its origin and token), when actions are allowed. */
  readonly guard: ActionGuard.ActionGuard
}

const REDELIVER = /^\/operator\/executions\/([^/]+)\/webhook\/redeliver$/
const EXECUTION = /^\/operator\/executions\/([^/]+)$/

/** A path segment decoded, or undefined when it is not valid percent-encoding. */
const pathId = (segment: string): string | undefined => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return undefined
  }
}

/** Answers a request to a path under `PREFIX`, or none when the path is not one of the endpoints. */
export type Lookup = (request: ServerRequest, path: string) => Effect.Effect<ServerResponse> | undefined

/** What the endpoints read: the views, the registry of processes, the stores, the facade and the settings. */
export type Requirements =
  | OperatorViews.OperatorViews
  | ProcessRegistry.ProcessRegistry
  | ExecutionStore.ExecutionStore
  | Appexec.Appexec
  | AppexecConfig.AppexecConfig
  | AppStore.AppStore

/** The endpoints over the views, the facade and the settings of the context. */
export const make = (
  options: Options
): Effect.Effect<Lookup, never, Requirements> =>
  Effect.gen(function*() {
    const views = yield* OperatorViews.OperatorViews
    const registry = yield* ProcessRegistry.ProcessRegistry
    const store = yield* ExecutionStore.ExecutionStore
    const appexec = yield* Appexec.Appexec
    const config = yield* AppexecConfig.AppexecConfig
    const leaseMs = AppexecConfig.millis(config.lease)
    // The servers of the node packages of this process, if it has any (`appexec serve --comfyui`).
    const backendServers = yield* Effect.serviceOption(BackendServers.BackendServers)
    const appQueues = yield* AppQueues.make

    const storageFailed = (error: Errors.StorageError) =>
      Effect.logError("operator views: storage failed", error).pipe(
        Effect.as(ErrorAnswers.answer(503, { code: "internal_error", message: "Storage did not answer; try again." }))
      )
    const ok = (data: unknown) => json(200, { data }, noStore)

    const settings = Effect.succeed(
      ok(options.actions ? { actions: true, actionToken: options.guard.token } : { actions: false })
    )

    const workspaces = Clock.currentTimeMillis.pipe(
      Effect.flatMap(views.workspaceLoad),
      Effect.map((load) =>
        ok(load.map((w) => ({ workspaceId: w.workspaceId, name: w.name, queued: w.queued, running: w.running })))
      )
    )

    const apps = Effect.map(appQueues, ok)

    const throughput = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      // The window ends with the current minute, so its last bucket fills as the minute goes.
      const until = Math.floor(now / MINUTE) * MINUTE + MINUTE
      const since = until - MINUTES * MINUTE
      const found = new Map((yield* views.finishedPerBucket(since, until, MINUTE)).map((b) => [b.start, b]))
      const minutes = Array.from({ length: MINUTES }, (_, i) => {
        const start = since + i * MINUTE
        const bucket = found.get(start)
        return { at: iso(start), completed: bucket?.completed ?? 0, failed: bucket?.failed ?? 0 }
      })
      const completed = minutes.reduce((sum, m) => sum + m.completed, 0)
      const failed = minutes.reduce((sum, m) => sum + m.failed, 0)
      return ok({
        since: iso(since),
        until: iso(until),
        bucketSeconds: MINUTE / 1000,
        completed,
        failed,
        failureRate: completed + failed === 0 ? null : failed / (completed + failed),
        minutes
      })
    })

    const workers = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const holders = yield* views.leaseHolders
      return ok(holders.map((h) => ({
        workerId: h.workerId,
        held: h.held,
        lastHeartbeatAt: iso(h.leaseExpiresAt - leaseMs),
        leaseExpiresAt: iso(h.leaseExpiresAt),
        live: h.leaseExpiresAt > now
      })))
    })

    const processes = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const [entries, holders] = yield* Effect.all([registry.list, views.leaseHolders], { concurrency: 2 })
      const held = new Map(holders.filter((h) => h.leaseExpiresAt > now).map((h) => [h.workerId, h.held]))
      return ok(entries.map((p) => ({
        processId: p.processId,
        name: p.name,
        role: p.role,
        version: p.version,
        startedAt: iso(p.startedAt),
        lastHeartbeatAt: iso(p.heartbeatAt),
        live: ProcessRegistry.isLive(p, now),
        running: held.get(p.processId) ?? 0,
        nodeTypes: p.nodeTypes ?? null
      })))
    })

    const backends = Option.match(backendServers, {
      onNone: () => Effect.succeed(ok([])),
      onSome: (servers) => Effect.map(servers.list, ok)
    })

    const execution = (executionId: string) =>
      Effect.gen(function*() {
        const found = isExecutionId(executionId) ? yield* store.get(executionId) : Option.none()
        if (Option.isNone(found)) {
          return ErrorAnswers.answer(404, { code: "not_found", message: "No execution has this id." })
        }
        const r = found.value
        const now = yield* Clock.currentTimeMillis
        const holder = (yield* views.holdersOf([r.executionId], now)).get(r.executionId)
        return ok({
          executionId: r.executionId,
          workspaceId: r.workspaceId,
          appId: r.appId,
          status: r.status,
          attempt: r.attempt ?? 0,
          createdAt: iso(r.createdAt),
          startedAt: r.startedAt === null ? null : iso(r.startedAt),
          completedAt: r.completedAt === null ? null : iso(r.completedAt),
          errorMessage: r.errorMessage,
          worker: holder === undefined ? null : { processId: holder, name: ProcessIdentity.nameOf(holder) }
        })
      })

    const deliveries = (query: URLSearchParams) => {
      const text = query.get("limit")
      const limit = text === null ? DELIVERY_LIMIT.default : Number(text)
      if (!Number.isInteger(limit) || limit < DELIVERY_LIMIT.min || limit > DELIVERY_LIMIT.max) {
        return Effect.succeed(
          ErrorAnswers.invalidRequest(
            `'limit' must be an integer from ${DELIVERY_LIMIT.min} to ${DELIVERY_LIMIT.max}.`
          )
        )
      }
      return Effect.gen(function*() {
        const failed = yield* views.failedDeliveries(limit)
        return ok(failed.map(({ appId, entry, workspaceId, workspaceName }) => {
          const last = entry.attempts.at(-1)
          return {
            deliveryId: entry.deliveryId,
            executionId: entry.executionId,
            workspaceId,
            workspaceName,
            appId,
            url: entry.url,
            createdAt: iso(entry.createdAt),
            lastAttemptAt: last === undefined ? null : iso(last.at),
            lastStatusCode: last?.statusCode ?? null,
            lastError: last?.error ?? null,
            attempts: entry.attempts.map((a) => ({ at: iso(a.at), statusCode: a.statusCode, error: a.error }))
          }
        }))
      })
    }

    const redeliver = (
      request: ServerRequest,
      executionId: string
    ): Effect.Effect<ServerResponse, Errors.StorageError> => {
      if (!options.actions) {
        return Effect.succeed(ErrorAnswers.fromInfo({
          code: "forbidden",
          message: "The operator views are read-only: start appexec serve with --admin-actions to redeliver webhooks."
        }))
      }
      // A page of another site may post to a private port through the operator's browser: refused.
      const refused = options.guard.refusal(request)
      if (refused !== undefined) return Effect.succeed(refused)
      return appexec.executions.redeliver(executionId).pipe(
        Effect.map((delivery) =>
          json(202, {
            data: {
              url: delivery.url,
              status: delivery.status,
              attempts: delivery.attempts.map((a) => ({
                at: a.at.toISOString(),
                statusCode: a.statusCode,
                error: a.error
              }))
            }
          }, noStore)
        ),
        Effect.catchTags({
          ExecutionNotFound: (error) => Effect.succeed(ErrorAnswers.fromRequestError(error)),
          WebhookNotRedeliverable: (error) =>
            Effect.succeed(ErrorAnswers.fromInfo({ code: error.code, message: error.message }))
        })
      )
    }

    const reads = new Map<string, (query: URLSearchParams) => Effect.Effect<ServerResponse, Errors.StorageError>>([
      [PREFIX, () => settings],
      [`${PREFIX}/workspaces`, () => workspaces],
      [`${PREFIX}/apps`, () => apps],
      [`${PREFIX}/throughput`, () => throughput],
      [`${PREFIX}/workers`, () => workers],
      [`${PREFIX}/processes`, () => processes],
      [`${PREFIX}/backends`, () => backends],
      [`${PREFIX}/deliveries`, deliveries]
    ])

    return (request, path) => {
      const read = reads.get(path)
      if (read !== undefined) {
        if (request.method !== "GET" && request.method !== "HEAD") {
          return Effect.succeed(ErrorAnswers.methodNotAllowed(request.method, path, ["GET", "HEAD"]))
        }
        const q = request.url.indexOf("?")
        const query = new URLSearchParams(q === -1 ? "" : request.url.slice(q + 1))
        return Effect.catchTag(read(query), "StorageError", storageFailed)
      }
      const one = EXECUTION.exec(path)
      if (one !== null) {
        if (request.method !== "GET" && request.method !== "HEAD") {
          return Effect.succeed(ErrorAnswers.methodNotAllowed(request.method, path, ["GET", "HEAD"]))
        }
        const id = pathId(one[1]!)
        return id === undefined
          ? Effect.succeed(ErrorAnswers.invalidRequest("The execution id in the path is not valid."))
          : Effect.catchTag(execution(id), "StorageError", storageFailed)
      }
      const redelivery = REDELIVER.exec(path)
      if (redelivery === null) return undefined
      if (request.method !== "POST") {
        return Effect.succeed(ErrorAnswers.methodNotAllowed(request.method, path, ["POST"]))
      }
      const executionId = pathId(redelivery[1]!)
      if (executionId === undefined) {
        return Effect.succeed(ErrorAnswers.invalidRequest("The execution id in the path is not valid."))
      }
      return Effect.catchTag(redeliver(request, executionId), "StorageError", storageFailed)
    }
  })
