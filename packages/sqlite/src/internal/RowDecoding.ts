/**
 * Rows become domain records at this edge: JSON columns are parsed and the result is decoded with
 * the domain schema, so a corrupt or foreign row is a `StorageError`, never a wrong value.
 */
import { Errors } from "@appexec/core"
import { Effect, Schema } from "effect"

/** Decodes `value` with `schema`; a failure is a `StorageError` of `operation`. */
export const decode =
  <A, I>(schema: Schema.Schema<A, I>, operation: string) =>
  (value: unknown): Effect.Effect<A, Errors.StorageError> =>
    Schema.decodeUnknown(schema)(value).pipe(
      Effect.mapError((cause) => new Errors.StorageError({ operation: `${operation}: decode row`, cause }))
    )

/** Parses a JSON column; a failure is a `StorageError` of `operation`. */
export const parseJson = (text: string, operation: string): Effect.Effect<unknown, Errors.StorageError> =>
  Effect.try({
    try: () => JSON.parse(text) as unknown,
    catch: (cause) => new Errors.StorageError({ operation: `${operation}: parse JSON column`, cause })
  })
