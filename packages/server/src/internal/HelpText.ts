/**
 * The `COMMANDS` list of the command's help, made readable. @effect/cli lists every subcommand
 * with its whole synopsis and pads every line to the longest one: `serve` has some thirty flags,
 * so each line carried some eight hundred spaces. Here each subcommand is its name and its
 * description, aligned in two columns; `appexec SUBCOMMAND --help` still shows the flags.
 */
import { stripVTControlCharacters } from "node:util"

/** A subcommand's line: `  - keys create [--data directory] …<padding>Create a key`. */
const item = /^(\s*)- ([a-z][\w-]*(?: [a-z][\w-]*)*)(?: [[<(-].*?)?(?: {2,}(\S.*?))?\s*$/

/** `text` with its `COMMANDS` list in two columns, or `text` itself when it has no such list. */
export const tidy = (text: string): string => {
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
