/**
 * A kysely query built and compiled once, run many times with new parameter values: the hot
 * paths (key lookup, execution get/insert/save, claim, rate-limit hit) would otherwise spend more
 * time building and compiling the query than the database spends running it.
 *
 * The query is built with placeholders where the per-call values go; compiling it yields the SQL
 * and the parameter list, in which every placeholder is replaced by the caller's value on
 * `bind`. Values the query fixes itself (`eb("claims", "+", 1)`) stay as they were compiled.
 * Since the SQL text is the same on every call, a runner may keep the statement prepared: SQLite
 * hands back the same better-sqlite3 statement from its cache, PostgreSQL runs it as a named
 * statement that each connection parses and plans once (`isPrepared`).
 */
import type { Compilable, CompiledQuery } from "kysely"

class Placeholder {
  constructor(readonly name: string) {}
}

/** A prepared query with its values bound: the same SQL text on every call. */
class Bound<R> implements Compilable<R> {
  constructor(readonly compiled: CompiledQuery<R>) {}
  compile(): CompiledQuery<R> {
    return this.compiled
  }
}

/** Whether `query` came from `PreparedQuery.bind`, so that its SQL text never varies with its values. */
export const isPrepared = (query: Compilable<unknown>): boolean => query instanceof Bound

/** Stands for the parameter `name` of a prepared query while it is built. */
export type Param<P> = <K extends keyof P & string>(name: K) => P[K]

/** A compiled query waiting for its parameters. */
export interface PreparedQuery<P extends Readonly<Record<string, unknown>>, R> {
  /** The query with `params` bound, ready for a runner's `all`/`first`/`run`. */
  readonly bind: (params: P) => Compilable<R>
}

/**
 * Prepares the query `build` returns. Annotate the parameter to name the parameters' types:
 *
 * ```ts
 * const byHash = PreparedQuery.make((p: Param<{ hash: string }>) => db.selectFrom("api_keys").selectAll().where("hash", "=", p("hash")))
 * runner.first("find api key", byHash.bind({ hash }))
 * ```
 */
export const make = <P extends Readonly<Record<string, unknown>>, R>(
  build: (param: Param<P>) => Compilable<R>
): PreparedQuery<P, R> => {
  let compiled: CompiledQuery<R> | undefined
  let slots: ReadonlyArray<{ readonly name: string } | { readonly value: unknown }> = []
  const compile = (): CompiledQuery<R> => {
    // The placeholder takes the place of a value of any type while kysely builds the query; it
    // never reaches the database, since `bind` replaces it.
    const param = ((name: string) => new Placeholder(name)) as unknown as Param<P>
    const query = build(param).compile()
    slots = query.parameters.map((value) => (value instanceof Placeholder ? { name: value.name } : { value }))
    compiled = query
    return query
  }
  return {
    bind: (params) => {
      const query = compiled ?? compile()
      const values: Readonly<Record<string, unknown>> = params
      const parameters = slots.map((slot) => ("name" in slot ? values[slot.name] : slot.value))
      // Written out rather than spread: once per statement on the hot paths.
      return new Bound({ query: query.query, queryId: query.queryId, sql: query.sql, parameters })
    }
  }
}
