/**
 * Rows become domain records at this edge: JSON columns are parsed and the result is decoded with
 * the domain schema, so a corrupt or foreign row is a `StorageError`, never a wrong value.
 *
 * Both run synchronously and return an `Either` (itself an `Effect`): reading a row costs no
 * fiber work beyond the decoding.
 */
import { Errors } from "@appexec/core"
import { Either, Schema } from "effect"

/** Decodes `value` with `schema`; a failure is a `StorageError` of `operation`. */
export const decode = <A, I>(schema: Schema.Schema<A, I>, operation: string) => {
  const decodeEither = Schema.decodeUnknownEither(schema)
  return (value: unknown): Either.Either<A, Errors.StorageError> =>
    Either.mapLeft(
      decodeEither(value),
      (cause) => new Errors.StorageError({ operation: `${operation}: decode row`, cause })
    )
}

/** Parses a JSON column; a failure is a `StorageError` of `operation`. */
export const parseJson = (text: string, operation: string): Either.Either<unknown, Errors.StorageError> =>
  Either.try({
    try: () => JSON.parse(text) as unknown,
    catch: (cause) => new Errors.StorageError({ operation: `${operation}: parse JSON column`, cause })
  })
