/**
 * Trace context across the queue: the span that accepts an execution is written with it as a W3C
 * `traceparent`, and the worker's run (in any process) and each webhook attempt continue that
 * trace from it; the HTTP app continues a caller's trace from its `traceparent` header. With no
 * tracer installed the spans are effect's own and nothing is exported.
 */
import { Effect, Option, Tracer } from "effect"

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

/** The tracer of a runtime that sets none: it keeps its spans to itself. */
const defaultTracer = Effect.runSync(Effect.tracer)

/**
 * Whether spans made here go somewhere: a tracer other than Effect's default is in place (an
 * OpenTelemetry layer, a test's exporter). A span costs more than a cached read (a stack trace is
 * captured for each), so the hot paths (each request, start, run and webhook attempt) make theirs
 * only when this is true; read it once, when the service is built.
 */
export const spansExported: Effect.Effect<boolean> = Effect.map(Effect.tracer, (tracer) => tracer !== defaultTracer)

/** The `traceparent` of `span` (the current one, `Tracer.ParentSpan`), if it is a span of this process. */
export const ofSpan = (span: Tracer.AnySpan | undefined): string | undefined =>
  span === undefined || span._tag !== "Span" || !/^[0-9a-f]{32}$/.test(span.traceId) ||
    !/^[0-9a-f]{16}$/.test(span.spanId)
    ? undefined
    : `00-${span.traceId}-${span.spanId}-${span.sampled ? "01" : "00"}`

/**
 * The `traceparent` of the current span, if there is one. Read as an optional service rather than
 * through `Effect.currentSpan`, which builds an exception (with its stack trace) when there is none.
 */
export const current: Effect.Effect<string | undefined> = Effect.map(
  Effect.serviceOption(Tracer.ParentSpan),
  (parent) => ofSpan(Option.getOrUndefined(parent))
)

/** The span a `traceparent` names, if it is well formed. */
export const parse = (traceParent: string | undefined): Option.Option<Tracer.ExternalSpan> => {
  const match = traceParent === undefined ? null : TRACEPARENT.exec(traceParent)
  return match === null
    ? Option.none()
    : Option.some(Tracer.externalSpan({ traceId: match[1]!, spanId: match[2]!, sampled: match[3] === "01" }))
}

/** Runs `effect` with the span of `traceParent` as its parent (unchanged when there is none). */
export const continueFrom = (traceParent: string | undefined) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Option.match(parse(traceParent), { onNone: () => effect, onSome: (parent) => Effect.withParentSpan(effect, parent) })
