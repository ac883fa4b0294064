/**
 * A whole appexec instance in memory with built-in nodes (those of `@appexec/nodes` unless told
 * others: the image and video packages' tests add theirs), the real guarded HTTP client (private
 * networks allowed, so tests reach their servers on 127.0.0.1), signed media URLs and a master
 * key, so that operator secrets can be set (`SecretStore`).
 */
import { Appexec, BlobStore, MediaUrls, type NodeType } from "@appexec/core"
import { BuiltinNodes, builtinNodes, type NodesSettings } from "@appexec/nodes"
import { NodeOutboundHttp } from "@appexec/platform-node"
import { TestHarness } from "@appexec/testing"
import { Effect, Layer, Option, Redacted } from "effect"

/** The base URL of the test instance. */
export const BASE_URL = "http://appexec.test/base"

/** The media URL secret of the test instance. */
export const SECRET = Redacted.make("a test secret that is at least thirty-two bytes long")

/** The master key of the test instance (32 bytes), which seals its operator secrets. */
export const MASTER_KEY = Redacted.make(new Uint8Array(32).fill(7))

/** The instance, with node types, settings and outbound HTTP options that differ from the test defaults. */
export const layer = (
  options: {
    /** The node types besides core's (default: `builtinNodes` of `@appexec/nodes`). */
    readonly nodes?: ReadonlyArray<NodeType.NodeType<BuiltinNodes.Requirements>>
    readonly settings?: NodesSettings.Overrides
    readonly outbound?: Partial<NodeOutboundHttp.Options>
    /** Lifetime of media URLs (default 7 days). */
    readonly ttlSeconds?: number
  } = {}
) =>
  TestHarness.layer({
    nodes: options.nodes ?? builtinNodes,
    config: { masterKey: MASTER_KEY },
    outbound: NodeOutboundHttp.layer({ allowPrivateNetworks: true, ...options.outbound })
  }).pipe(
    Layer.provideMerge(
      BuiltinNodes.layer({
        ...(options.settings === undefined ? {} : { settings: options.settings }),
        mediaUrls: MediaUrls.layer({
          mode: "signed",
          baseUrl: BASE_URL,
          secret: SECRET,
          ...(options.ttlSeconds === undefined ? {} : { ttlSeconds: options.ttlSeconds })
        })
      })
    )
  )

/** Imports `definition`, starts it with `inputs` as a fresh user, and waits for its end. */
export const run = (definition: unknown, inputs: Record<string, string>) =>
  Effect.gen(function*() {
    const appexec = yield* Appexec.Appexec
    const app = yield* appexec.apps.import({ public: true, ...(definition as object) })
    const principal = yield* TestHarness.signIn()
    const started = yield* appexec.executions.start(principal, app.appId, inputs)
    return yield* appexec.executions.await(started.executionId)
  })

/** The bytes and content type behind a media output URL, read through the media URL check. */
export const download = (url: string) =>
  Effect.gen(function*() {
    const urls = yield* MediaUrls.MediaUrls
    const blobs = yield* BlobStore.BlobStore
    const found = yield* urls.verify(new URL(url))
    const key = Option.getOrThrowWith(found, () => new Error(`not a valid media URL: ${url}`)).key
    return Option.getOrThrowWith(yield* blobs.get(key), () => new Error(`no blob under ${key}`))
  })
