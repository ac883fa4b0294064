/**
 * The logger of the `appexec` executable: Effect's logfmt or JSON lines, written to stderr in
 * batches. A busy server logs one line per request; writing each with its own `console.error`
 * costs a system call per line, so lines are gathered and written together once per event-loop
 * turn (`setImmediate`), and whatever is left is written when the layer closes or the process
 * exits. A line reaches stderr at most one event-loop turn after it was logged; only a process
 * killed with `SIGKILL` can lose the lines of its last turn.
 */
import { Effect, Logger } from "effect"

/** How each line is formatted. */
export type Format = "logfmt" | "json"

/** Replaces the default logger with the batched stderr logger for the layer's lifetime. */
export const layer = (format: Format) =>
  Logger.replaceScoped(
    Logger.defaultLogger,
    Effect.gen(function*() {
      const lines: Array<string> = []
      let scheduled = false
      const flush = () => {
        scheduled = false
        if (lines.length === 0) return
        const text = `${lines.join("\n")}\n`
        lines.length = 0
        process.stderr.write(text)
      }
      yield* Effect.acquireRelease(
        Effect.sync(() => process.on("exit", flush)),
        () =>
          Effect.sync(() => {
            process.off("exit", flush)
            flush()
          })
      )
      return Logger.map(format === "json" ? Logger.jsonLogger : Logger.logfmtLogger, (line) => {
        lines.push(line)
        if (!scheduled) {
          scheduled = true
          setImmediate(flush)
        }
      })
    })
  )
