/**
 * What a host does as one workspace, with Promises: import and read apps, start executions and
 * follow them. The instance acts as its default workspace (`appexec.apps`, `appexec.executions`),
 * and as any other through `appexec.as({ workspace })`, in-process, without an API key: the
 * principal is the workspace's user (created by name when missing), its key id
 * `IN_PROCESS_KEY_ID`, and no key row is written.
 */
import type { AppDetail, AppSummary } from "@appexec/api/App"
import type { Execution, ExecutionPage, StartedExecution, WebhookEvent } from "@appexec/api/Execution"
import * as Core from "@appexec/core/Appexec"
import { Duration, Effect } from "effect"
import { AppexecError } from "./AppexecError.js"
import type { Run } from "./internal/Runner.js"

/** The apps a workspace can run. */
export interface Apps {
  /**
   * Checks and stores an app definition (docs/apps.md) for this workspace, or, with
   * `{ public: true }` (or `"public": true` in the definition, unless `{ public: false }`), for
   * every workspace; importing a definition of the same name again makes a new version of that
   * app. Resolves with the app's summary (its `appId`).
   */
  import(definition: unknown, options?: { readonly public?: boolean | undefined }): Promise<AppSummary>
  /** The workspace's apps, then up to `limit` public apps, filtered by `search` (docs/api.md#list-apps). */
  list(
    query?: { readonly search?: string | undefined; readonly limit?: number | undefined }
  ): Promise<ReadonlyArray<AppSummary>>
  /** An app's parameters (docs/api.md#get-an-app). */
  get(appId: string): Promise<AppDetail>
}

/** The executions of a workspace. */
export interface Executions {
  /**
   * Validates `inputs` against the app's parameters and queues an execution (docs/api.md#start-an-execution);
   * resolves at once with its id and output placeholders. `webhook`: a URL that gets the signed
   * result; `webhookEvents`: the events it gets (docs/webhooks.md#events, default `["completed"]`);
   * `idempotencyKey`: the same key answers the first execution again; `priority`: -10 to 10,
   * default 0, how soon it is taken (docs/scaling.md#priorities).
   */
  start(
    appId: string,
    inputs: Readonly<Record<string, unknown>>,
    options?: {
      readonly webhook?: string | undefined
      readonly webhookEvents?: ReadonlyArray<WebhookEvent> | undefined
      readonly idempotencyKey?: string | undefined
      readonly priority?: number | undefined
    }
  ): Promise<StartedExecution>
  /** The execution as it is; with `wait`, once it finished or `wait` passed (docs/api.md#long-polling). */
  get(executionId: string, options?: { readonly wait?: Duration.DurationInput | undefined }): Promise<Execution>
  /**
   * The execution once it is completed or failed, woken in-process (no polling). With `timeout`,
   * rejects with code `timeout` when it has not finished by then (the execution goes on).
   */
  await(executionId: string, options?: { readonly timeout?: Duration.DurationInput | undefined }): Promise<Execution>
  /** `start`, then `await`. */
  run(
    appId: string,
    inputs: Readonly<Record<string, unknown>>,
    options?: {
      readonly webhook?: string | undefined
      readonly webhookEvents?: ReadonlyArray<WebhookEvent> | undefined
      readonly priority?: number | undefined
      readonly timeout?: Duration.DurationInput | undefined
    }
  ): Promise<Execution>
  /**
   * Cancels an execution (docs/api.md#cancel-an-execution): a queued one fails at once, a running
   * one is interrupted where it runs; rejects with `execution_finished` when it had finished.
   */
  cancel(executionId: string): Promise<Execution>
  /** The workspace's executions, newest first, a page at a time (docs/api.md#list-executions). */
  list(query?: Core.ExecutionQuery): Promise<ExecutionPage>
}

/** A workspace as the host acts in it. */
export interface Workspace {
  readonly apps: Apps
  readonly executions: Executions
}

/** Whom the host acts as: a workspace by name, and its user (default `default`). */
export interface ActAs {
  readonly workspace: string
  readonly user?: string | undefined
}

/** Whether a definition says `"public": true`. */
const saysPublic = (definition: unknown): boolean =>
  typeof definition === "object" && definition !== null && "public" in definition && definition.public === true

/** The workspace `principal` resolves to, its calls run by `run`. */
export const make = (run: Run<Core.Appexec>, principal: () => Promise<Core.Principal>): Workspace => {
  const withPrincipal = <A, E>(f: (appexec: Core.Appexec["Type"], principal: Core.Principal) => Effect.Effect<A, E>) =>
    principal().then((p) => run(Effect.flatMap(Core.Appexec, (appexec) => f(appexec, p))))

  const awaitFinished = (executionId: string, timeout: Duration.DurationInput | undefined) =>
    withPrincipal((appexec, p) =>
      // Found for this workspace first: another workspace's execution is not found, as over HTTP.
      appexec.executions.get(p, executionId).pipe(
        Effect.zipRight(appexec.executions.await(executionId)),
        (waiting) =>
          timeout === undefined ? waiting : Effect.timeoutFail(waiting, {
            duration: timeout,
            onTimeout: () =>
              new AppexecError(
                "timeout",
                `Execution ${executionId} has not finished within ${Duration.format(Duration.decode(timeout))}.`
              )
          })
      )
    )

  const start: Executions["start"] = (appId, inputs, options) =>
    withPrincipal((appexec, p) => appexec.executions.start(p, appId, inputs, options))

  return {
    apps: {
      import: (definition, options) =>
        withPrincipal((appexec, p) =>
          appexec.apps.import(definition, {
            owner: (options?.public ?? saysPublic(definition)) ? { public: true } : { workspaceId: p.workspaceId }
          })
        ),
      list: (query) => withPrincipal((appexec, p) => appexec.apps.list(p, query)),
      get: (appId) => withPrincipal((appexec, p) => appexec.apps.get(p, appId))
    },
    executions: {
      start,
      get: (executionId, options) =>
        withPrincipal((appexec, p) => appexec.executions.get(p, executionId, { wait: options?.wait })),
      await: (executionId, options) => awaitFinished(executionId, options?.timeout),
      run: (appId, inputs, options) =>
        start(appId, inputs, {
          webhook: options?.webhook,
          webhookEvents: options?.webhookEvents,
          priority: options?.priority
        }).then((started) => awaitFinished(started.executionId, options?.timeout)),
      cancel: (executionId) => withPrincipal((appexec, p) => appexec.executions.cancel(executionId, p)),
      list: (query) => withPrincipal((appexec, p) => appexec.executions.list(p, query))
    }
  }
}
