/**
 * The `{ data: … }` wrapper every JSON response except the key set carries (docs/api.md#resources).
 */
import { Schema } from "effect"

/** Wraps a payload schema in `{ data }`. */
export const Envelope = <A, I, R>(payload: Schema.Schema<A, I, R>) => Schema.Struct({ data: payload })
