/**
 * `provider.comfyui`: runs an API-format ComfyUI workflow on one of the instance's ComfyUI
 * servers (docs/nodes.md#providercomfyui). Its `inputs` set workflow inputs (`"6.text":
 * "{{prompt}}"`, by node id or title) from upstream nodes; media upstream (produced, or a URL
 * into a `Load…` node) is uploaded first. The ComfyUI `prompt_id` is derived from the execution
 * and the node (`Workflow.promptIdOf`): before submitting, every server is asked about it, and a
 * run that a server holds (queued, running or done, after a takeover or a lost answer) is
 * re-attached to instead of submitted twice. The run is followed (`Follow`); each file an
 * `executed` event names that would be the node's value were the run to end then is shown as its
 * partial result (`Partials`); at the end its output file is read through `/history` and `/view`
 * into appexec's media store. When the node stops
 * first (the execution canceled or timed out), the prompt is deleted from the server's queue or
 * interrupted (`/interrupt {prompt_id}`), and the server is held until it no longer runs it.
 */
import { NodeType, Redactor, SecretStore } from "@appexec/core"
import { NodesSettings } from "@appexec/nodes"
import { Clock, Duration, Effect, Either, Option, type Redacted, Schedule, Schema } from "effect"
import { ComfyuiPool, PROBE_TIMEOUT } from "./ComfyuiPool.js"
import { ComfyuiSettings } from "./ComfyuiSettings.js"
import * as ComfyApi from "./internal/ComfyApi.js"
import { endOf, follow } from "./internal/Follow.js"
import { outputOf } from "./internal/Output.js"
import * as Partials from "./internal/Partials.js"
import { promptOf } from "./internal/Prompt.js"
import * as Workflow from "./Workflow.js"

/** The config of `provider.comfyui`. */
export const Config = Schema.Struct({
  /** The workflow in API format (ComfyUI's "Export (API)"). */
  workflow: Workflow.WorkflowField,
  /** Workflow inputs by `nodeId.input` or `title.input`: a text whose `{{nodeId}}` placeholders name upstream nodes. */
  inputs: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), { default: () => ({}) }),
  /** The output node (id or title) whose first file is the node's value (default: the first output of the run). */
  outputNode: Schema.optional(Schema.NonEmptyString),
  /** Time limit of the whole run in ms (default 3600000, an hour). */
  timeoutMs: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.between(1000, 24 * 60 * 60 * 1000)))
})
export type Config = typeof Config.Type

/** How long a cancel may take, from the first request to the server no longer running the prompt. */
export const CANCEL_TIMEOUT = Duration.seconds(10)

const fail = (message: string) => new NodeType.NodeFailure({ message })

/** The import-time problems of a config placed with `upstream` nodes. */
const problemsOf = (config: Config, upstream: ReadonlyArray<string>): Array<string> => {
  const decoded = Workflow.decode(config.workflow)
  if (Either.isLeft(decoded)) return [decoded.left]
  const problems: Array<string> = []
  for (const [name, template] of Object.entries(config.inputs)) {
    const target = Workflow.targetOf(decoded.right, name)
    if (Either.isLeft(target)) problems.push(target.left)
    for (const id of Workflow.placeholdersIn(template)) {
      if (!upstream.includes(id)) problems.push(`input '${name}': {{${id}}} does not name an upstream node`)
    }
  }
  if (config.outputNode !== undefined && Either.isLeft(Workflow.targetOf(decoded.right, `${config.outputNode}.x`))) {
    problems.push(`outputNode '${config.outputNode}' is not a node of the workflow (by id or title)`)
  }
  return problems
}

/** `provider.comfyui`: runs a ComfyUI workflow and yields its output file. */
export const providerComfyui = NodeType.defineNode({
  type: "provider.comfyui",
  description:
    "Runs a ComfyUI workflow (API format) on the instance's ComfyUI servers, follows its progress, and yields its output image, video or audio; re-attaches to a run under way instead of running it twice.",
  role: "process",
  inputs: { min: 0, max: 32 },
  config: Config,
  check: (config, placement) => problemsOf(config, placement.upstream),
  // The workflow graph shows the ComfyUI nodes and links in this node's place.
  graph: (config) =>
    Either.getOrUndefined(
      Either.map(Workflow.decode(config.workflow), (workflow) =>
        Workflow.innerGraphOf(workflow, config.inputs, config.outputNode))
    ),
  run: ({ config, execution, log, node, partial, preview, progress, upstream }) =>
    Effect.gen(function*() {
      const settings = yield* ComfyuiSettings
      const pool = yield* ComfyuiPool
      const { media: limits } = yield* NodesSettings.NodesSettings
      if (pool.servers.length === 0) {
        return yield* fail("no ComfyUI server is configured (appexec serve --comfyui URL, or APPEXEC_COMFYUI)")
      }
      const workflow = yield* Either.match(Workflow.decode(config.workflow), {
        onLeft: (problem) => Effect.fail(fail(problem)),
        onRight: Effect.succeed
      })
      const promptId = Workflow.promptIdOf(execution.executionId, node.id)
      // One client id per prompt: a later attempt, in any process, gets the prompt's events.
      const clientId = `appexec-${promptId}`
      // Servers behind an authenticating proxy: the operator's secret as Authorization, masked in logs.
      const headers: Record<string, Redacted.Redacted<string>> = {}
      if (settings.authSecret !== undefined) {
        const secret = yield* SecretStore.find(settings.authSecret, execution.workspaceId)
        if (Option.isNone(secret)) return yield* SecretStore.notSet(settings.authSecret)
        yield* Redactor.register(secret.value)
        headers["authorization"] = secret.value
      }
      // A server that gives no answer is marked down in the pool (and probed until it answers).
      const serverOf = (url: string, timeout = settings.requestTimeout): ComfyApi.Server => ({
        url,
        timeout,
        headers,
        down: (error) => pool.markDown(url, error)
      })
      const timeoutMs = config.timeoutMs ?? 3_600_000
      const startedAt = yield* Clock.currentTimeMillis
      const hosts = pool.servers.map(ComfyApi.hostOf).join(", ")

      // A server that holds the prompt already (an earlier attempt submitted it) is re-attached to,
      // down or not; a new prompt goes to a free server among those that answered (a server that
      // does not answer, or that the outbound address policy refuses, is left out of this run).
      // Every server is asked, a down one within the probe's time limit (it may be back already).
      const locate = Effect.gen(function*() {
        const down = yield* pool.down
        const known = yield* Effect.forEach(pool.servers, (url) =>
          ComfyApi.lookup(serverOf(url, down.has(url) ? PROBE_TIMEOUT : settings.requestTimeout), promptId).pipe(
            Effect.tap(() =>
              pool.markUp(url)
            ),
            Effect.tapError((failure) => log(failure.message, "warn")),
            Effect.option
          ), { concurrency: "unbounded" })
        const answering: Array<string> = []
        let attached: { readonly url: string; readonly known: ComfyApi.Known } | undefined
        pool.servers.forEach((url, i) => {
          const k = known[i]!
          if (Option.isNone(k)) {
            return
          }
          answering.push(url)
          if (attached === undefined && k.value._tag !== "Unknown") {
            attached = { url, known: k.value }
          }
        })
        return { attached, answering, down: [...down.keys()] }
      })
      // With no server answering and some down, the run waits for one to come back (within its time limit).
      const located = Effect.gen(function*() {
        let waited = false
        while (true) {
          const found = yield* locate
          if (found.attached !== undefined || found.answering.length > 0) {
            return found
          }
          // Down as it was asked or now: one back in between ends the wait at once.
          const down = [...new Set([...found.down, ...(yield* pool.down).keys()])]
          if (down.length === 0) {
            return yield* fail(`no ComfyUI server answered (${hosts})`)
          }
          if (!waited) {
            yield* log(`no ComfyUI server answers (${hosts}): waiting for one to come back`, "warn")
          }
          waited = true
          yield* pool.awaitUp(down)
        }
      })
      const placed = Effect.gen(function*() {
        const { answering, attached } = yield* located
        if (attached !== undefined) {
          yield* log(
            `re-attaching to prompt ${promptId} on ${
              ComfyApi.hostOf(attached.url)
            } (${attached.known._tag.toLowerCase()}): not submitted again`
          )
          yield* pool.hold(attached.url, execution.executionId)
          return { url: attached.url, attached }
        }
        return { url: yield* pool.acquire(execution.executionId, answering), attached }
      }).pipe(
        Effect.timeoutFail({
          duration: timeoutMs,
          onTimeout: () =>
            fail(
              `no ComfyUI server answered and was free within ${Math.round(timeoutMs / 1000)} s (${hosts}); ` +
                "nothing was submitted"
            )
        })
      )
      const { attached, url } = yield* placed
      const server = serverOf(url)
      const prompt = attached === undefined
        ? yield* promptOf(server, workflow, config.inputs, upstream, promptId)
        : workflow
      const submit = ComfyApi.submit(server, prompt, clientId, promptId).pipe(
        Effect.zipRight(log(`prompt ${promptId} submitted to ${ComfyApi.hostOf(url)}`))
      )

      // The node stopped first: the prompt leaves the queue, or is interrupted and waited out.
      const cancel = Effect.gen(function*() {
        const known = yield* ComfyApi.lookup(server, promptId)
        if (known._tag === "Queued") {
          yield* ComfyApi.deleteQueued(server, promptId)
          yield* log(`prompt ${promptId} taken out of the ComfyUI queue`)
        } else if (known._tag === "Running") {
          yield* ComfyApi.interrupt(server, promptId)
          yield* log(`prompt ${promptId} interrupted on ComfyUI`)
          yield* ComfyApi.lookup(server, promptId).pipe(
            Effect.repeat({
              while: (k) =>
                k._tag === "Running",
              schedule: Schedule.spaced("100 millis")
            })
          )
        }
      }).pipe(
        // It runs as the node stops (uninterruptible): made interruptible so that its time limit holds.
        Effect.interruptible,
        Effect.timeoutFail({ duration: CANCEL_TIMEOUT, onTimeout: () => fail("the cancel took too long") }),
        Effect.catchAll((failure) => log(`canceling ComfyUI prompt ${promptId}: ${failure.message}`, "warn"))
      )

      const partials = Partials.make({
        server,
        workflow,
        outputNode: config.outputNode,
        maxBytes: limits.maxBytes,
        partial,
        log
      })
      const followed = attached?.known._tag === "Done"
        ? Effect.map(endOf(attached.known.entry), (entry) => ({ entry, previews: 0 }))
        : follow({
          server,
          promptId,
          clientId,
          workflow: prompt,
          pollInterval: settings.pollInterval,
          start: attached === undefined ? submit : Effect.void,
          resubmit: submit,
          progress,
          log,
          preview,
          executed: partials.executed
        }).pipe(Effect.scoped, Effect.onInterrupt(() => cancel))
      const left = timeoutMs - ((yield* Clock.currentTimeMillis) - startedAt)
      const { entry, previews } = yield* followed.pipe(
        Effect.timeoutFail({
          duration: Math.max(1, left),
          onTimeout: () =>
            fail(`the ComfyUI run did not finish within ${Math.round(timeoutMs / 1000)} s; it was canceled`)
        }),
        Effect.tapError((failure) => log(failure.message, "error"))
      )
      if (previews > 0) yield* log(`${previews} preview frame${previews === 1 ? "" : "s"} received while sampling`)
      return yield* outputOf(server, workflow, entry, config.outputNode, limits.maxBytes, log, partials.shown())
    }).pipe(Effect.scoped)
})
