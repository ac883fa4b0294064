/**
 * The test instance of `@appexec/nodes` (`nodes/test/support/Instance.ts`: real guarded HTTP with
 * private networks allowed, signed media URLs) with `provider.comfyui` beside the built-in nodes,
 * its servers those given and polled every 50 ms of quiet (the pool probes a down server through
 * its own guarded client, as the instance's).
 */
import { Appexec, MediaUrls } from "@appexec/core"
import { BuiltinNodes, builtinNodes } from "@appexec/nodes"
import { ComfyuiNodes, comfyuiNodes } from "@appexec/nodes-comfyui"
import { NodeOutboundHttp } from "@appexec/platform-node"
import { TestHarness } from "@appexec/testing"
import { Effect, Layer } from "effect"
import * as Base from "../../../nodes/test/support/Instance.js"

/** The instance with the ComfyUI servers `servers`, sending the secret `authSecret` as `Authorization` when given. */
export const layer = (servers: ReadonlyArray<string>, options: { readonly authSecret?: string } = {}) =>
  TestHarness.layer({
    nodes: [...builtinNodes, ...comfyuiNodes],
    config: { masterKey: Base.MASTER_KEY },
    outbound: NodeOutboundHttp.layer({ allowPrivateNetworks: true })
  }).pipe(
    Layer.provideMerge(BuiltinNodes.layer({
      mediaUrls: MediaUrls.layer({ mode: "signed", baseUrl: Base.BASE_URL, secret: Base.SECRET })
    })),
    Layer.provideMerge(
      ComfyuiNodes.layer({
        servers,
        pollInterval: "50 millis",
        ...(options.authSecret === undefined ? {} : { authSecret: options.authSecret })
      }).pipe(Layer.provide(NodeOutboundHttp.layer({ allowPrivateNetworks: true })))
    )
  )

/** Imports `definition` and starts it with `inputs` as a fresh user: the execution id and its principal. */
export const start = (definition: unknown, inputs: Record<string, string>) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const app = yield* appexec.apps.import({ public: true, ...(definition as object) })
    const principal = yield* TestHarness.signIn()
    const started = yield* appexec.executions.start(principal, app.appId, inputs)
    return { executionId: started.executionId, principal }
  })

export { download, run } from "../../../nodes/test/support/Instance.js"
