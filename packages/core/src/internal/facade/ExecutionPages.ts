/**
 * The execution list of a workspace (docs/api.md#list-executions): newest first, filtered by
 * status and app, a page at a time behind an opaque cursor (the base64url of the storage
 * position the next page starts before).
 */
import { Api, type Authentication } from "@appexec/api"
import { type ExecutionPage, ExecutionStatus } from "@appexec/api/Execution"
import { AppId } from "@appexec/api/Ids"
import { Effect, Either, Encoding, Schema } from "effect"
import { InvalidRequest } from "../../Errors.js"
import { toExecution } from "../../ExecutionRecord.js"
import { ExecutionStore } from "../../ExecutionStore.js"
import { isUuid } from "./Visibility.js"

type Principal = Authentication.Principal

/** Default and bounds of the list's `limit`. */
export const EXECUTION_LIST_LIMIT = Api.EXECUTION_LIST_LIMIT

/** Which executions of the principal's workspace `list` answers. */
export interface ExecutionQuery {
  /** One of `queued`, `running`, `completed`, `failed`. */
  readonly status?: string | undefined
  /** The app's id (a UUID). */
  readonly appId?: string | undefined
  /** Executions per page, 1–100 (default 20). */
  readonly limit?: number | undefined
  /** The `nextCursor` of the page before. */
  readonly cursor?: string | undefined
}

const isStatus = Schema.is(ExecutionStatus)

/** The cursor of the page that starts before storage position `position`. */
export const cursorOf = (position: number): string => Encoding.encodeBase64Url(String(position))

/** The position a cursor stands for; none when it is not a cursor `cursorOf` made. */
export const positionOf = (cursor: string): number | undefined => {
  const decoded = Encoding.decodeBase64UrlString(cursor)
  if (Either.isLeft(decoded) || !/^[1-9][0-9]{0,15}$/.test(decoded.right)) return undefined
  const position = Number(decoded.right)
  return Number.isSafeInteger(position) && cursorOf(position) === cursor ? position : undefined
}

const refuse = (reason: string) => Effect.fail(new InvalidRequest({ reason }))

/** The listing, over the store. */
export const make = Effect.gen(function*() {
  const store = yield* ExecutionStore
  return {
    list: Effect.fn("Appexec.executions.list")(function*(principal: Principal, query: ExecutionQuery = {}) {
      const limit = query.limit ?? EXECUTION_LIST_LIMIT.default
      if (!Number.isInteger(limit) || limit < EXECUTION_LIST_LIMIT.min || limit > EXECUTION_LIST_LIMIT.max) {
        return yield* refuse(
          `'limit' must be an integer from ${EXECUTION_LIST_LIMIT.min} to ${EXECUTION_LIST_LIMIT.max}.`
        )
      }
      const { appId, cursor, status } = query
      if (status !== undefined && !isStatus(status)) {
        return yield* refuse(`'status' must be one of ${ExecutionStatus.literals.join(", ")}.`)
      }
      if (appId !== undefined && !isUuid(appId)) return yield* refuse("'appId' must be a UUID.")
      const before = cursor === undefined ? undefined : positionOf(cursor)
      if (cursor !== undefined && before === undefined) {
        return yield* refuse("'cursor' is not a cursor of this list: send the 'nextCursor' of the page before.")
      }
      const page = yield* store.page({
        workspaceId: principal.workspaceId,
        status,
        // Checked just above: a UUID.
        appId: appId === undefined ? undefined : AppId.make(appId, { disableValidation: true }),
        before,
        limit
      })
      const answer: ExecutionPage = {
        data: page.executions.map(toExecution),
        nextCursor: page.next === null ? null : cursorOf(page.next)
      }
      return answer
    })
  }
})
