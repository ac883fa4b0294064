/**
 * Who this process is (docs/operations.md#the-fleet): its name (`host:pid`, or the one the
 * operator gave with `--name`), its process id (the name and a short random suffix, unique
 * across restarts of a process of the same name: the owner of every lease its worker takes), its
 * role, its version and its start. The host gives the name, role and version; the instance draws
 * the suffix and reads the start from the clock.
 */
import { Clock, Context, Effect, Layer } from "effect"
import { IdGenerator } from "./IdGenerator.js"
import type { Role } from "./ProcessRegistry.js"

/** What the host says of its process. */
export interface Options {
  /** `host:pid`, or the operator's name for it. */
  readonly name: string
  readonly role: Role
  /** The appexec version it runs. */
  readonly version: string
}

/** The identity of this process. */
export class ProcessIdentity extends Context.Tag("@appexec/core/ProcessIdentity")<
  ProcessIdentity,
  Options & {
    /** `name#suffix`: unique across restarts, the owner of this process's leases. */
    readonly processId: string
    /** When the instance started (epoch ms). */
    readonly startedAt: number
  }
>() {}

/** The name of the process that owns a lease (its process id without the suffix). */
export const nameOf = (processId: string): string => {
  const at = processId.lastIndexOf("#")
  return at === -1 ? processId : processId.slice(0, at)
}

/** The identity of `options`, with a suffix of six hex digits drawn from the id generator. */
export const layer = (options: Options): Layer.Layer<ProcessIdentity, never, IdGenerator> =>
  Layer.effect(
    ProcessIdentity,
    Effect.gen(function*() {
      const uuid = yield* (yield* IdGenerator).uuid
      // The end of a UUID is random, its start may be time.
      const suffix = uuid.replace(/-/g, "").slice(-6)
      return { ...options, processId: `${options.name}#${suffix}`, startedAt: yield* Clock.currentTimeMillis }
    })
  )
