/**
 * The identity of an `appexec` process (docs/operations.md#the-fleet): the name the operator gave
 * (`--name`), else `host:pid`; its role; the version of appexec it runs. Core adds a random suffix
 * to make the owner id of its leases (`ProcessIdentity`), and the process's log lines carry the
 * name as `process=NAME`.
 */
import type { ProcessIdentity } from "@appexec/core"
import { Effect } from "effect"
import { hostname } from "node:os"
import { VERSION } from "./Version.js"

/** The identity of this process in `role`, named `name` or else `host:pid`. */
export const identityOf = (
  name: string | undefined,
  role: ProcessIdentity.Options["role"]
): ProcessIdentity.Options => ({ name: name ?? `${hostname()}:${process.pid}`, role, version: VERSION })

/** `effect` with every log line of its fibers (those it forks too) naming the process. */
export const annotated = (identity: ProcessIdentity.Options) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.annotateLogs(effect, "process", identity.name)
