/**
 * The command's help as @effect/cli writes it, made readable:
 * - the `COMMANDS` list: @effect/cli lists every subcommand with its whole synopsis and pads
 *   every line to the longest one (`serve` has some thirty flags, so each line carried some eight
 *   hundred spaces); here each subcommand is its name and its description, aligned in two
 *   columns (`appexec SUBCOMMAND --help` still shows the flags);
 * - the usage line names the whole command (`$ appexec keys create …`, not `$ create …`);
 * - the line @effect/cli puts under every argument and option to say its type ("A user-defined
 *   piece of text.") is left out: each has a description of its own.
 * Text that is not help (no `USAGE` heading) is left as it is.
 */
import { stripVTControlCharacters } from "node:util"

/** A subcommand's line: `  - keys create [--data directory] …<padding>Create a key`. */
const item = /^(\s*)- ([a-z][\w-]*(?: [a-z][\w-]*)*)(?: [[<(-].*?)?(?: {2,}(\S.*?))?\s*$/

/** What @effect/cli says of an argument or an option by its type alone. */
const typeLines: ReadonlySet<string> = new Set([
  "A user-defined piece of text.",
  "A user-defined piece of text that is confidential.",
  "A true or false value.",
  "An integer.",
  "A floating point number.",
  // Said of every setting: each has a default or means none when absent (docs/cli.md#settings).
  "This setting is optional."
])

/** `text` with its `COMMANDS` list in two columns, or `text` itself when it has no such list. */
const tidyCommands = (text: string): string => {
  const plain = stripVTControlCharacters(text)
  const at = plain.indexOf("COMMANDS\n")
  if (at === -1 || (at > 0 && plain[at - 1] !== "\n")) return text
  const lines = plain.slice(at).split("\n")
  const items = lines.map((line) => item.exec(line))
  const width = Math.max(...items.map((m) => (m === null ? 0 : m[2]!.length)))
  const tidied = lines.map((line, i) => {
    const m = items[i]
    if (m === null || m === undefined) return line.trimEnd()
    const [, indent, name, description] = m
    return description === undefined ? `${indent}${name}` : `${indent}${name!.padEnd(width)}  ${description}`
  })
  return plain.slice(0, at) + tidied.join("\n")
}

/**
 * The words of the command a help was asked of, from its arguments (`process.argv` without node
 * and the script): those before the first option (`keys`, `create` of `keys create --help`).
 */
export const commandWords = (args: ReadonlyArray<string>): ReadonlyArray<string> => {
  const first = args.findIndex((arg) => arg.startsWith("-"))
  return first === -1 ? args : args.slice(0, first)
}

/**
 * `text`, when it is help, made readable (see above); `words` are the command's words as typed
 * (`commandWords`), which the usage line is completed with.
 */
export const tidy = (text: string, words: ReadonlyArray<string> = []): string => {
  if (!/^USAGE$/m.test(stripVTControlCharacters(text))) return tidyCommands(text)
  const lines = tidyCommands(text).split("\n")
  const kept: Array<string> = []
  for (const line of lines) {
    const plain = stripVTControlCharacters(line)
    if (typeLines.has(plain.trim())) {
      // The empty line that stood between it and the description goes with it.
      if (kept.at(-1)?.trim() === "") kept.pop()
      continue
    }
    const usage = /^\$ (\S+)(.*)$/.exec(plain)
    const named = usage === null ? -1 : words.indexOf(usage[1]!)
    kept.push(usage !== null && named !== -1 ? `$ appexec ${words.slice(0, named + 1).join(" ")}${usage[2]}` : line)
  }
  return kept.join("\n")
}
