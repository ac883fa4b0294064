/**
 * The signals that stop `serve` and `worker` (docs/operations.md#stopping). The first SIGINT or
 * SIGTERM interrupts the command (`NodeRuntime.runMain` listens for it), which stops in order:
 * requests in flight finish, the worker drains. A second one stops at once: the drain is hurried
 * (`Shutdown.unsafeHurry`: what still runs is handed back, its leases released), and the process
 * exits within `HURRY_EXIT_MS` whatever is left (leases not released by then run out and their
 * executions are taken over); a third exits there and then. A signal within `SAME_PRESS_MS` of
 * the one before counts with it: `npm start` forwards to its child the Ctrl-C that the terminal
 * also sends it, so one press may arrive twice.
 */
import type { Shutdown } from "@appexec/core"
import { Effect, Runtime } from "effect"
import { constants } from "node:os"

/** Signals this close together are one. */
const SAME_PRESS_MS = 500

/** The longest a hurried stop takes before the process exits. */
export const HURRY_EXIT_MS = 2000

/** The stop signals of a command, as long as its scope is open. */
export interface StopSignals {
  /** From now on, a second signal hurries `shutdown` (the instance's, once it is built). */
  readonly hurries: (shutdown: Shutdown.Shutdown["Type"]) => void
}

/** The status of a process ended by `signal`, as a shell reports it (130 for SIGINT, 143 for SIGTERM). */
const statusOf = (signal: NodeJS.Signals) => 128 + constants.signals[signal]

/** Listens for SIGINT and SIGTERM until the scope closes (the command's outermost, closed last). */
export const make = Effect.flatMap(Effect.runtime<never>(), (runtime) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const log = Runtime.runFork(runtime)
      let shutdown: Shutdown.Shutdown["Type"] | undefined
      let count = 0
      let last = 0
      const listener = (signal: NodeJS.Signals) => {
        const now = Date.now()
        if (count > 0 && now - last < SAME_PRESS_MS) return
        count += 1
        last = now
        if (count === 2) {
          log(Effect.logWarning(`${signal} again: stopping at once; what still runs is handed back`))
          shutdown?.unsafeHurry()
          setTimeout(() => process.exit(statusOf(signal)), HURRY_EXIT_MS).unref()
        } else if (count > 2) {
          process.exit(statusOf(signal))
        }
      }
      process.on("SIGINT", listener)
      process.on("SIGTERM", listener)
      const signals: StopSignals = {
        hurries: (instance) => {
          shutdown = instance
        }
      }
      return { listener, signals }
    }),
    ({ listener }) =>
      Effect.sync(() => {
        process.off("SIGINT", listener)
        process.off("SIGTERM", listener)
      })
  ).pipe(Effect.map(({ signals }) => signals)))
