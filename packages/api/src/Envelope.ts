/**
 * The `{ data: … }` wrapper every JSON response except the key set carries (SPEC §2).
 */
import { Schema } from "effect"

/** Wraps a payload schema in `{ data }`. */
export const Envelope = <A, I, R>(payload: Schema.Schema<A, I, R>) => Schema.Struct({ data: payload })
