/**
 * Benchmark server (b), the framework floor: one `HttpApi` endpoint on the same platform
 * server as appexec, answering a constant body. Prints its port on stdout.
 */
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup, HttpServer } from "@effect/platform"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Layer, Schema } from "effect"
import { createServer } from "node:http"

const body = JSON.parse(process.env.BENCH_BODY ?? "{}") as unknown

class Bare extends HttpApi.make("bare").add(
  HttpApiGroup.make("executions").add(
    HttpApiEndpoint.get("get", "/v1/executions/:executionId")
      .setPath(Schema.Struct({ executionId: Schema.String }))
      .addSuccess(Schema.Unknown)
  )
) {}

const Handlers = HttpApiBuilder.group(Bare, "executions", (h) => h.handle("get", () => Effect.succeed(body)))

const printPort = Layer.effectDiscard(
  Effect.flatMap(
    HttpServer.HttpServer,
    (server) => Console.log(`port ${server.address._tag === "TcpAddress" ? server.address.port : 0}`)
  )
)

const Main = Layer.mergeAll(
  HttpApiBuilder.serve().pipe(Layer.provide(HttpApiBuilder.api(Bare).pipe(Layer.provide(Handlers)))),
  printPort
).pipe(Layer.provide(NodeHttpServer.layer(() => createServer(), { port: 0, host: "127.0.0.1" })))

Layer.launch(Main).pipe(NodeRuntime.runMain({ disablePrettyLogger: true }))
