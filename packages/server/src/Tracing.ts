/**
 * OpenTelemetry traces of the server (docs/operations.md#traces), with `@effect/opentelemetry`:
 * effect's spans — one per HTTP request, the facade's calls, the worker's run of an execution,
 * each webhook attempt — go to an OpenTelemetry span processor. The trace of an execution is
 * carried across the queue in storage, so one trace runs from the start request through the run
 * (in whichever process) to every webhook attempt. `serve` exports over OTLP/HTTP when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` is set (the exporter reads the standard `OTEL_EXPORTER_OTLP_*`
 * variables); `OTEL_SERVICE_NAME` names the service (default `appexec`).
 */
import { NodeSdk } from "@effect/opentelemetry"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { BatchSpanProcessor, type SpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Layer } from "effect"
import { VERSION } from "./Version.js"

/** Spans of everything built with this layer go to `spanProcessor`. */
export const layer = (options: { readonly spanProcessor: SpanProcessor; readonly serviceName?: string }) =>
  NodeSdk.layer(() => ({
    resource: { serviceName: options.serviceName ?? "appexec", serviceVersion: VERSION },
    spanProcessor: options.spanProcessor
  }))

/** OTLP/HTTP export when `OTEL_EXPORTER_OTLP_ENDPOINT` is set in `env`; nothing otherwise. */
export const fromEnv = (env: Readonly<Record<string, string | undefined>>): Layer.Layer<never> => {
  const endpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT
  if (endpoint === undefined || endpoint.trim() === "") return Layer.empty
  return Layer.discard(
    layer({
      spanProcessor: new BatchSpanProcessor(new OTLPTraceExporter()),
      ...(env.OTEL_SERVICE_NAME === undefined ? {} : { serviceName: env.OTEL_SERVICE_NAME })
    })
  )
}
